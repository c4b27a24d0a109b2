"""ketch_prompt_kit: what the prompt features share (a library: it registers nothing).

``@path`` mentions (``mentions``: the attachments plugin expands them, the shell
completes them), Markdown files with YAML front matter and where they are found
(``markdown_files``: commands and skills), argument substitution (``arguments``),
``allowed-tools`` as a narrowing of one turn (``allowed_tools``) and
running a command the person asked for, in their shell (``user_shell``), and the
encrypted prompt-history file's format (``history_file``: the shell writes it, the
store re-seals it when the key rotates).
"""
