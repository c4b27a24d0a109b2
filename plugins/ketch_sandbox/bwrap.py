"""The bubblewrap command line for a :class:`~ketch_sandbox.view.View`, and checking that bwrap works.

Besides the filesystem view: every namespace unshared (user, mount, pid, ipc, uts,
cgroup, network: a command with network reaches out only through the egress proxy's
socket, see network.py), all capabilities
dropped, no new privileges (bwrap always sets PR_SET_NO_NEW_PRIVS), a new session (no
terminal injection through TIOCSTI), and the sandbox dies with ketch
(``--die-with-parent``: its pid namespace, and so everything it started, is killed
when ketch exits, however it exits). Variables naming host sockets (D-Bus, agents,
the display) are unset: nothing they name is reachable anyway.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ketch_sandbox.masks import MaskSet
from ketch_sandbox.view import View

UNSET_ENV = (
    "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS",
    "SSH_AUTH_SOCK",
    "SSH_AGENT_PID",
    "GPG_AGENT_INFO",
    "XDG_RUNTIME_DIR",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DOCKER_HOST",
)


@dataclass(frozen=True)
class Probe:
    available: bool
    reason: str = ""
    path: str = ""


def probe(binary: str | None = None) -> Probe:
    """Whether bwrap exists and can create its namespaces here (it cannot in some
    containers, or where unprivileged user namespaces are disabled)."""
    if not sys.platform.startswith("linux"):
        return Probe(False, f"no sandbox on {sys.platform} (bubblewrap is Linux-only)")
    path = binary or shutil.which("bwrap")
    if not path:
        return Probe(False, "bubblewrap (bwrap) is not installed")
    from ketch_sandbox.probe_cache import known_to_work, remember

    if known_to_work(path):  # the same bwrap, kernel and settings: it worked before
        return Probe(True, path=path)
    found = trial(
        [
            path,
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--unshare-all",
            "--die-with-parent",
            "--new-session",
            "--",
            "true",
        ],
        path,
    )
    if found.available:
        remember(path)
    return found


def trial(argv: list[str], path: str) -> Probe:
    """Run a bwrap command line that should succeed; why not, if it does not."""
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=20, check=False, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, f"bwrap could not run ({exc})", path)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return Probe(
            False,
            f"bwrap cannot create a sandbox here ({detail[-1] if detail else f'exit {done.returncode}'}; are user namespaces disabled?)",
            path,
        )
    return Probe(True, path=path)


def command_line(
    argv: list[str],
    view: View,
    masks: MaskSet,
    *,
    extra: Sequence[str] = (),
    bwrap: str = "bwrap",
) -> list[str]:
    """The argv that runs ``argv`` inside ``view`` (``masks`` gets a placeholder per
    masked secret; ``extra``: more bwrap arguments, after the view's mounts)."""
    args = [bwrap, "--unshare-all"]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    for target, link in view.symlinks:
        args += ["--symlink", target, str(link)]
    for path in view.system:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp"]
    if view.home_tmpfs is not None:
        args += ["--tmpfs", str(view.home_tmpfs)]
    for path in view.read_only:
        args += ["--ro-bind", str(path), str(path)]
    if view.workspace is not None:
        args += ["--bind", str(view.workspace), str(view.workspace)]
    args += protected_mounts(view)
    for secret, hint in view.masks:
        shown = (
            str(secret.relative_to(view.workspace))
            if view.workspace is not None and secret.is_relative_to(view.workspace)
            else str(secret)
        )
        mask = masks.add(secret, hint, shown)
        args += ["--ro-bind", str(mask.source), str(secret)]
    if view.cover or view.hide:
        empty_file, empty_dir = masks.directory / "empty", masks.directory / "empty.d"
        empty_file.touch()
        empty_dir.mkdir(exist_ok=True)
        for path in view.cover:
            args += ["--ro-bind", str(empty_file), str(path)]
        for path in view.hide:
            args += ["--ro-bind", str(empty_dir), str(path)]
    args += extra
    for name in UNSET_ENV:
        args += ["--unsetenv", name]
    return [*args, "--", *argv]


def protected_mounts(view: View) -> list[str]:
    """Protected paths read-only: those that exist, and the empty directories reserved
    for those that do not yet (each bound over itself: nothing can be made there)."""
    args: list[str] = []
    for path in [*view.protect, *view.reserve]:
        args += ["--ro-bind", str(path), str(path)]
    return args


def describe(view: View) -> dict[str, list[str]]:
    """The view as plain lists (for ``/sandbox``-style reports and tests)."""
    return {
        "read_only": [str(p) for p in [*view.system, *view.read_only]],
        "writable": [str(view.workspace)] if view.workspace else [],
        "read_only_inside": [str(p) for p in view.protect],
        "reserved": [str(p) for p in view.reserve],
        "masked": [str(p) for p, _ in view.masks],
        "covered": [str(p) for p in view.cover],
        "hidden": [str(p) for p in view.hide],
        "home": [str(view.home_tmpfs)] if view.home_tmpfs else [],
    }


def home_of(environ: dict[str, str] | None = None) -> Path:
    return Path((environ or os.environ).get("HOME") or os.path.expanduser("~"))
