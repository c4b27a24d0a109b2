"""Building the bubblewrap command line, and checking once that bwrap works here.

Inside: the whole filesystem read-only; the workspace writable except its ``.git``
and ``.ketch`` (read-only); a private ``/tmp``; fresh /dev and /proc; every namespace
unshared, the network too unless allowed; no new privileges (bwrap always sets
PR_SET_NO_NEW_PRIVS), all capabilities dropped, a new session (no terminal
injection), and the child dies with ketch. Secrets a command has no business
reading are hidden: ~/.ssh, ~/.gnupg, cloud credentials, the keyring directory, and
the per-user runtime directory (the D-Bus session bus, where the Secret Service holds
ketch's keys, and agent sockets), plus the Docker socket.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ketch_guards.guards import is_within

HIDDEN_HOME_DIRS = (".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store", ".config/gcloud", ".local/share/keyrings")
HIDDEN_HOME_FILES = (".netrc", ".pgpass", ".git-credentials", ".pypirc", ".npmrc")
HIDDEN_FILES = ("/var/run/docker.sock", "/run/docker.sock")
READ_ONLY_IN_WORKSPACE = (".git", ".ketch")
UNSET_ENV = ("DBUS_SESSION_BUS_ADDRESS", "SSH_AUTH_SOCK", "GPG_AGENT_INFO")


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
    try:
        done = subprocess.run(
            [path, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-all", "--die-with-parent", "--new-session", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(False, f"bwrap could not run ({exc})", path)
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return Probe(False, f"bwrap cannot create a sandbox here ({detail[-1] if detail else f'exit {done.returncode}'}; are user namespaces disabled?)", path)
    return Probe(True, path=path)


def wrap(argv: list[str], workspace: Path, *, network: bool, bwrap: str = "bwrap", home: Path | None = None) -> list[str]:
    """The argv that runs ``argv`` inside the sandbox."""
    root = Path(os.path.realpath(workspace))
    home = Path(os.path.realpath(home or Path.home()))
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    if os.path.isdir("/var/tmp"):
        args += ["--tmpfs", "/var/tmp"]
    args += ["--bind", str(root), str(root)]
    for name in READ_ONLY_IN_WORKSPACE:
        path = root / name
        if path.exists() and not path.is_symlink():
            args += ["--ro-bind", str(path), str(path)]
    # Hidden last, so they stay hidden even when the workspace contains them (a
    # workspace at $HOME); a hiding place that contains the workspace is left alone.
    for name in HIDDEN_HOME_DIRS:
        path = home / name
        if path.is_dir() and not path.is_symlink() and not is_within(root, path):
            args += ["--tmpfs", str(path)]
    for name in HIDDEN_HOME_FILES:
        path = home / name
        if path.is_file() and not path.is_symlink():
            args += ["--ro-bind", "/dev/null", str(path)]
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"
    if os.path.isdir(runtime) and not is_within(root, Path(runtime)):
        args += ["--tmpfs", runtime]
    for name in HIDDEN_FILES:
        if os.path.exists(name):
            args += ["--ro-bind", "/dev/null", name]
    args += ["--unshare-all"]
    if network:
        args += ["--share-net"]
    for name in UNSET_ENV:
        args += ["--unsetenv", name]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--"]
    return args + list(argv)
