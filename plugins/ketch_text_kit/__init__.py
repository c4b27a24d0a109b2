"""ketch_text_kit: handling text that came from somewhere ketch does not trust (a library).

Instruction files, tool descriptions from MCP servers, fetched web pages and search
results all pass through ``unicode.strip_invisible`` before a model reads them. It
registers nothing, so the context, MCP and web plugins can each be disabled alone.
"""
