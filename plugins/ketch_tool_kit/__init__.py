"""ketch_tool_kit: what the bundled tools share (a library: it registers nothing).

The file, search, shell and web tool plugins build on it: the workspace boundary for
paths (``paths``), the path field and tool base class (``base``), output caps and the
``[tools.NAME]`` settings (``caps``), text-or-binary detection (``textfile``), the
``.gitignore``-aware walk (``walk``) and a session's file backend (``files``: an
editor's buffers instead of the disk). Disabling any one tool plugin leaves the others
working, because none of them imports another plugin.
"""
