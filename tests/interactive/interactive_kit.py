"""Driving ``ketch`` in a real terminal: tmux runs it, ``send-keys`` types, ``capture-pane``
reads the screen as a person sees it (after the terminal has interpreted every escape
sequence, so assertions are about text, not about how it was drawn).

Every wait polls the screen until the text appears or a generous timeout passes; on a
timeout the assertion shows the whole screen.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import isolated_env

HERE = Path(__file__).resolve().parent
EXITED = re.compile(r"\[ketch exited (\d+)\]")
IDLE = re.compile(r"^❯\s+\S.* · context ~?\d+%\s*$")
TIMEOUT = 30.0

needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)


class Terminal:
    """One ketch process in its own tmux server (its own socket: tests never share one).

    ``plugins`` is the allow-list of bundled plugins (None: every bundled plugin); the
    scripted provider and the test tools always load. ``script`` is the provider's script.
    """

    def __init__(
        self,
        root: Path,
        *,
        script: list[dict[str, Any]] | None = None,
        plugins: str | None = "interactive",
        load: str = "",
        env: dict[str, str] | None = None,
        args: tuple[str, ...] = (),
        width: int = 110,
        height: int = 40,
        home: Path | None = None,
        workspace: Path | None = None,
        provider: str | None = "scripted",
    ) -> None:
        self.root = root
        self.home = home or root / "home"
        self.workspace = workspace or root / "ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.script_path = root / "script.json"
        self.log_path = root / "requests.jsonl"
        if script is not None or not self.script_path.exists():
            self.script_path.write_text(json.dumps(script or []), encoding="utf-8")
        loads = [
            "scripted=ketch.testing.scripted_plugin",
            "shelltest=shelltest_tools",
            *filter(None, load.split(",")),
        ]
        names = [item.split("=", 1)[0] for item in loads]
        self.env = {
            **isolated_env(self.home),
            "KETCH_LOAD": ",".join(loads),
            "KETCH_SCRIPT": str(self.script_path),
            "KETCH_SCRIPT_LOG": str(self.log_path),
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).rstrip(
                os.pathsep
            ),
            "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
            "KETCH_TEST_KEYRING_FILE": str(self.home / "keyring.json"),
            "TERM": "xterm-256color",
            **(env or {}),
        }
        if plugins is not None:  # an allow-list: only these (plus the essential set and ours) load
            self.env["KETCH_PLUGINS"] = ",".join([*filter(None, plugins.split(",")), *names])
        self.server = f"ketch-test-{uuid.uuid4().hex[:10]}"
        command = [
            sys.executable,
            "-m",
            "ketch",
            *(["--provider", provider] if provider else []),
            *args,
        ]
        launcher = root / f"launch-{self.server}.sh"
        exports = "".join(f"export {key}={shlex.quote(value)}\n" for key, value in self.env.items())
        launcher.write_text(
            f"{exports}cd {shlex.quote(str(self.workspace))}\n"
            f'{shlex.join(command)}\necho "[ketch exited $?]"\nexec sleep 600\n',
            encoding="utf-8",
        )
        self._tmux(
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            str(width),
            "-y",
            str(height),
            f"bash {shlex.quote(str(launcher))}",
        )

    # --- tmux ----------------------------------------------------------------------------

    def _tmux(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-L", self.server, *args], capture_output=True, text=True, timeout=20
        )
        if proc.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {proc.stderr.strip()}")
        return proc.stdout

    def screen(self) -> str:
        """Everything on the terminal, scrollback included, wrapped lines joined."""
        return self._tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "main")

    def escapes(self) -> str:
        """The whole screen with its escape sequences (colours, bold) kept."""
        return self._tmux("capture-pane", "-p", "-e", "-J", "-S", "-", "-t", "main")

    def visible(self) -> str:
        return self._tmux("capture-pane", "-p", "-J", "-t", "main")

    def keys(self, *keys: str) -> None:
        """tmux key names: ``Enter``, ``C-c``, ``C-d``, ``Up``, ``Escape``, or single characters."""
        self._tmux("send-keys", "-t", "main", *keys)

    def type(self, text: str, *, enter: bool = True) -> None:
        self._tmux("send-keys", "-t", "main", "-l", text)
        if enter:
            self.keys("Enter")

    def close(self) -> None:
        try:
            socket = self._tmux("display-message", "-p", "-t", "main", "#{socket_path}").strip()
        except RuntimeError:
            socket = ""
        subprocess.run(["tmux", "-L", self.server, "kill-server"], capture_output=True, timeout=20)
        if socket:
            Path(socket).unlink(missing_ok=True)  # tmux leaves the socket file behind

    # --- waiting -------------------------------------------------------------------------------

    def wait_for(
        self, pattern: str, *, count: int = 1, timeout: float = TIMEOUT, regex: bool = False
    ) -> str:
        """Wait until ``pattern`` occurs ``count`` times on the screen; return the screen."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            found = len(re.findall(pattern, screen)) if regex else screen.count(pattern)
            if found >= count:
                return screen
            time.sleep(0.05)
        raise AssertionError(
            f"{pattern!r} (x{count}) did not appear within {timeout:.0f}s; the screen:\n{screen}"
        )

    def wait_idle(self, timeout: float = TIMEOUT) -> str:
        """Wait until the main prompt is open and empty: the last line is the prompt and its meter
        (an accepted prompt line loses the meter, so only the open prompt has one)."""
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.visible()
            lines = [line for line in screen.splitlines() if line.strip()]
            if lines and IDLE.match(lines[-1]):
                return self.screen()
            time.sleep(0.05)
        raise AssertionError(
            f"the shell did not come back to an empty prompt within {timeout:.0f}s; the screen:\n{screen}"
        )

    def ready(self) -> str:
        self.wait_for("Ctrl-D quits")
        return self.wait_idle()

    def exit_code(self, timeout: float = TIMEOUT) -> int:
        screen = self.wait_for(EXITED.pattern, regex=True, timeout=timeout)
        match = EXITED.search(screen)
        assert match is not None
        return int(match.group(1))

    # --- what the scripted provider saw ------------------------------------------------------------

    def requests(self) -> list[dict[str, Any]]:
        if not self.log_path.exists():
            return []
        return [
            json.loads(line)
            for line in self.log_path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]


def message_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of every part of a logged request's messages (text or tool output)."""
    out: list[tuple[str, str]] = []
    for message in request["messages"]:
        for part in message["parts"]:
            out.append((message["role"], part.get("text") or part.get("output") or ""))
    return out


def no_traceback(screen: str) -> None:
    assert "Traceback (most recent call last)" not in screen, screen
