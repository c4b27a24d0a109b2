"""The environment and the fixed settings every git ketch runs gets.

The environment is built from nothing: ``PATH`` and ``HOME`` (the user's own
``~/.gitconfig`` still applies: it is the user's, and says where their global ignore
file is), the locale, and git's own switches: no system config
(``GIT_CONFIG_NOSYSTEM``), no terminal prompt, no optional locks (a look never writes
``.git/index``), no pager, no lazy fetch of missing objects. Nothing else from the
caller's environment reaches git: no ``GIT_DIR``/``GIT_CONFIG_*``/``GIT_EXTERNAL_DIFF``/
``GIT_SSH_COMMAND``/``GIT_ASKPASS`` and no credential.

:data:`FIXED` are the ``-c`` settings that switch off, by name, every program git
could take from a repository whatever the repository says: the fsmonitor hook (and
the built-in daemon), hooks (``core.hooksPath`` to a path that cannot hold any), the
pager, the editors, ssh and proxies, credential helpers, every network transport, the
signature check of ``git log``, submodule recursion and automatic maintenance. The
programs a repository names under a name of its own (a filter or diff driver) are
switched off per name by :func:`ketch_git_kit.run.overrides_for`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

# A hooks directory that can hold no hook (a file, not a directory): git finds none.
NO_HOOKS = os.devnull

FIXED: tuple[tuple[str, str], ...] = (
    ("core.fsmonitor", "false"),
    ("core.useBuiltinFSMonitor", "false"),
    ("core.untrackedCache", "false"),
    ("core.hooksPath", NO_HOOKS),
    ("core.pager", "cat"),
    ("core.editor", "false"),
    ("sequence.editor", "false"),
    ("core.askPass", ""),
    ("core.sshCommand", "false"),
    ("core.gitProxy", ""),
    ("core.alternateRefsCommand", ""),
    ("credential.helper", ""),
    ("protocol.allow", "never"),
    # A repository's protocol.NAME.allow outranks protocol.allow: name each one too
    # (``ext::`` runs a command; the others reach out). Others found are added per name.
    ("protocol.ext.allow", "never"),
    ("protocol.file.allow", "never"),
    ("protocol.git.allow", "never"),
    ("protocol.ssh.allow", "never"),
    ("protocol.http.allow", "never"),
    ("protocol.https.allow", "never"),
    ("diff.external", ""),
    ("log.showSignature", "false"),
    # Signing and verifying run gpg.program (or ssh-keygen, or a repository's choice):
    # ketch's commits and merges are never signed, and merges verify nothing.
    ("commit.gpgSign", "false"),
    ("tag.gpgSign", "false"),
    ("push.gpgSign", "false"),
    ("merge.verifySignatures", "false"),
    ("submodule.recurse", "false"),
    ("status.submoduleSummary", "false"),
    ("diff.submodule", "short"),
    ("gc.auto", "0"),
    ("maintenance.auto", "false"),
    ("uploadpack.packObjectsHook", ""),
    ("interactive.diffFilter", ""),
)

_KEPT = ("PATH", "HOME", "SYSTEMROOT", "USERPROFILE", "TMPDIR")


def safe_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of a git ketch runs (see the module's docstring)."""
    env = {key: environ[key] for key in _KEPT if key in environ}
    env.update(
        LC_ALL="C",
        LANG="C",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_TERMINAL_PROMPT="0",
        GIT_OPTIONAL_LOCKS="0",
        GIT_NO_LAZY_FETCH="1",
        GIT_PAGER="cat",
        PAGER="cat",
        GIT_ADVICE="0",
    )
    return env


class GitDidNotRun(Exception):
    """git could not start or did not finish in time (one line, for the person)."""


def spawn(
    argv: Sequence[str],
    cwd: Path,
    environ: Mapping[str, str],
    timeout: float,
    what: str,
    *,
    extra: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run one git command line in the safe environment (plus ``extra``, ketch's own
    variables), output captured, no stdin. Raises :class:`GitDidNotRun` (``what``
    names it) rather than a traceback."""
    try:
        return subprocess.run(
            list(argv),
            cwd=cwd,
            env={**safe_environment(environ), **(extra or {})},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise GitDidNotRun(f"{what} took over {timeout:g} s") from None
    except OSError as exc:
        raise GitDidNotRun(f"git could not run ({exc.strerror or exc})") from None
