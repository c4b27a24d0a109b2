"""What the checkpoint tests share: a workspace with files of every kind, a ``ketch``
subprocess with the scripted model, and exact snapshots of files and of ``.git``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PLUGINS = [
    "guards",
    "headless",
    "fs",
    "shell",
    "sandbox",
    "policy",
    "store",
    "crypto",
    "checkpoints",
]
CANARY = "KETCHCKPTCANARY51d2"

# The four files of the acceptance turn, with contents and modes that are easy to get wrong.
ORIGINAL = {
    "notes.md": (
        b"original notes \xff\xfe not utf-8\r\nsecond line without newline",
        0o600,
    ),  # write_file overwrites it
    "src/config.py": (b"DEBUG = False\nNAME = 'ketch'\n", 0o644),  # edit_file edits it
    "old.log": (bytes(range(256)) * 4, 0o640),  # shell rm deletes it
    "tool.sh": (b"#!/bin/sh\necho beta\n", 0o755),  # shell sed -i rewrites it
}


def make_workspace(root: Path, name: str = "ws") -> Path:
    ws = root / name
    ws.mkdir(parents=True, exist_ok=True)
    for rel, (data, mode) in ORIGINAL.items():
        path = ws / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        path.chmod(mode)
    (ws / "README.md").write_text("untouched by the turn\n")
    (ws / ".gitignore").write_text("build/\n*.tmp\n")
    if shutil.which("git"):
        subprocess.run(["git", "init", "-q", str(ws)], check=True, capture_output=True)
    else:  # a stand-in with the same shape: ketch must never write under it either
        (ws / ".git" / "objects").mkdir(parents=True)
        (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    return ws


def acceptance_script() -> list[dict[str, Any]]:
    """One turn: write_file, edit_file (after reading), and a shell command that deletes
    one file and rewrites another with sed -i."""
    return [
        {
            "tool_calls": [
                {"name": "read_file", "input": {"path": "notes.md"}},
                {"name": "read_file", "input": {"path": "src/config.py"}},
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "write_file",
                    "input": {"path": "notes.md", "content": "rewritten by the model\n"},
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "edit_file",
                    "input": {
                        "path": "src/config.py",
                        "old_string": "DEBUG = False",
                        "new_string": "DEBUG = True",
                    },
                }
            ]
        },
        {
            "tool_calls": [
                {
                    "name": "shell",
                    "input": {"command": "rm old.log && sed -i 's/beta/gamma/' tool.sh"},
                }
            ]
        },
        {"text": "done: four files changed"},
    ]


def files_of(ws: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``ws`` except ``.git``: content and mode bits."""
    out: dict[str, tuple[bytes, int]] = {}
    for path in sorted(ws.rglob("*")):
        rel = path.relative_to(ws).as_posix()
        if rel == ".git" or rel.startswith(".git/") or not path.is_file() or path.is_symlink():
            continue
        out[rel] = (path.read_bytes(), path.stat().st_mode & 0o7777)
    return out


def dirs_of(ws: Path) -> set[str]:
    return {
        p.relative_to(ws).as_posix()
        for p in ws.rglob("*")
        if p.is_dir() and ".git" not in p.relative_to(ws).parts
    }


def git_state(ws: Path) -> dict[str, tuple[bytes, int, int]]:
    """Everything under ``.git``: content, mode and mtime of each file (and the dirs)."""
    out: dict[str, tuple[bytes, int, int]] = {}
    git = ws / ".git"
    for path in sorted([git, *git.rglob("*")]):
        st = path.lstat()
        data = path.read_bytes() if path.is_file() else b""
        out[path.relative_to(ws).as_posix()] = (data, st.st_mode, st.st_mtime_ns)
    return out


def env_for(
    tmp_path: Path,
    script: list[dict[str, Any]] | None = None,
    *,
    plugins: list[str] | None = None,
    **extra: str,
) -> dict[str, str]:
    """A ``ketch`` subprocess's environment: the test's isolated dirs (conftest), a file
    keyring, the scripted model (its script kept in ``tmp_path``, consumed across runs)."""
    env = {
        **os.environ,
        "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
        "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
        "KETCH_LOAD": "scripted=ketch.testing.scripted_plugin",
        "KETCH_PLUGINS": ",".join([*(plugins or PLUGINS), "scripted"]),
        "KETCH_SCRIPT": str(tmp_path / "script.json"),
        "KETCH_SCRIPT_LOG": str(tmp_path / "requests.jsonl"),
    }
    if script is not None:
        (tmp_path / "script.json").write_text(json.dumps(script), encoding="utf-8")
    env.update(extra)
    return env


def ketch(
    *args: str, cwd: Path, env: dict[str, str], timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def headless(prompt: str, *more: str) -> list[str]:
    """``ketch -p PROMPT`` with the scripted model, full-access (the scripted calls run
    without asking), JSON out."""
    return [
        "-p",
        prompt,
        "--provider",
        "scripted",
        "--profile",
        "full-access",
        "--output-format",
        "json",
        *more,
    ]


def turn(
    prompt: str, *, cwd: Path, env: dict[str, str], more: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One headless turn; its ``--output-format json`` result."""
    proc = ketch(*headless(prompt, *more), cwd=cwd, env=env)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def requests(tmp_path: Path) -> list[dict[str, Any]]:
    path = tmp_path / "requests.jsonl"
    return (
        [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if path.exists()
        else []
    )


def user_texts(request: dict[str, Any]) -> list[str]:
    return [
        "".join(p.get("text", "") for p in m["parts"] if p.get("type") == "text")
        for m in request["messages"]
        if m["role"] == "user"
    ]


def leaks(needle: str, *roots: Path) -> list[str]:
    """Files under ``roots`` holding ``needle`` (plain, UTF-16, lower case) or named after it."""
    needles = [needle.encode(), needle.encode("utf-16-le"), needle.lower().encode()]
    found: list[str] = []
    scanned = 0
    for root in roots:
        if not root.exists():
            continue
        for path in root.rglob("*"):
            if needle in path.name:
                found.append(f"file name {path}")
            if path.is_file():
                scanned += 1
                data = path.read_bytes()
                found += [f"{path}: {n!r}" for n in needles if n in data]
    assert scanned, f"nothing to scan under {roots}"
    return found
