"""ketch_claude_kit: what ketch's Claude Code compatibility shares (a library: it registers nothing).

Claude Code's tool names and ketch's (``tool_names``), so that hook matchers, agent
definitions and imported settings written for Claude Code mean the same tools in ketch.
"""
