"""``ketch-claude``: ketch with Claude Code's output schema, for programs written for
``claude`` (point the Agent SDK's ``cli_path`` / ``pathToClaudeCodeExecutable`` here).

The same as ``ketch --stream-schema claude ARGS``: every option of ``ketch`` works, and
``--output-format stream-json`` / ``json`` print Claude Code's messages.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from ketch.api import main as ketch_main

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-v"], ["-V"]):
        from ketch.api import __version__
        from ketch_headless.claude_stream import CLAUDE_CODE_VERSION

        print(f"{CLAUDE_CODE_VERSION} (ketch {__version__}, Claude Code compatible)")
        return 0
    return ketch_main(["--stream-schema", "claude", *args])


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
