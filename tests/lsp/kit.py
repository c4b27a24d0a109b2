"""What the language-server tests share: a two-file Python project, the fake servers,
user configs, and reading what the model was sent."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
FAKE = HERE / "fake_server.py"
PASSPHRASE = "lsp tests passphrase"
PLUGINS = ["guards", "fs", "shell", "sandbox", "policy", "store", "crypto", "checkpoints", "lsp"]

A_PY = 'def greet(name: str) -> str:\n    return "hi " + name\n'
B_PY = 'from a import greet\n\nmessage: str = greet("bob")\n'


def project(ws: Path) -> Path:
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "a.py").write_text(A_PY)
    (ws / "b.py").write_text(B_PY)
    (ws / "pyproject.toml").write_text('[project]\nname = "demo"\nversion = "0"\n')
    return ws


def basedpyright() -> str:
    from ketch_lsp.servers import find_program

    found = find_program("basedpyright-langserver", Path("/nonexistent"), dict(os.environ))
    if found is None:
        pytest.skip("basedpyright is not installed (pip install basedpyright; .ci/run does)")
    return found[0]


def sandboxed() -> bool:
    if not shutil.which("bwrap"):
        return False
    from ketch_sandbox import active

    return active()


def fake_script(ws: Path) -> Path:
    """The fake server, copied where the sandbox lets the server see it (the workspace;
    ketch's own Python, which runs it, is visible read-only)."""
    target = ws / "tools" / "fake_server.py"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(FAKE, target)
    return target


def fake_config(mode: str, ws: Path, *, name: str = "fake", extra: str = "", lsp: str = "") -> str:
    """A user config with one fake server for ``*.fk`` files, and no built-in server."""
    command = json.dumps([sys.executable, str(fake_script(ws)), mode])
    off = "".join(
        f"[lsp.servers.{n}]\nenabled = false\n"
        for n in ("pyright", "ruff", "typescript", "gopls", "rust-analyzer", "clangd")
    )
    return (
        f"[lsp]\n{lsp}\n"
        f'[lsp.servers.{name}]\ncommand = {command}\npatterns = ["*.fk"]\n{extra}\n' + off
    )


def tool_outputs(request: dict[str, Any]) -> list[str]:
    """The tool results a recorded request carries (the model's view), in order."""
    out = []
    for message in request.get("messages", []):
        for part in message.get("parts", message.get("content", [])) or []:
            if isinstance(part, dict) and "tool_call_id" in part:
                out.append(str(part.get("output", "")))
    return out


def results(events: list[Any], name: str | None = None) -> list[Any]:
    return [e for e in events if e.type == "tool_result" and (name is None or e.name == name)]


def notices(events: list[Any], word: str) -> list[str]:
    return [e.message for e in events if e.type == "notice" and word in e.message]
