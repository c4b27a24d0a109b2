"""State where it belongs: no module-level mutable state in plugins, kits or contrib.

Per-kernel state lives in ``kernel.stash``, per-session state in ``session.stash`` /
``session.state`` (``ketch acp`` runs several kernels in one process: a module global
is shared by all of them). This test finds module-level mutable values (a dict, list or
set, or a call making one, bound to a lower-case name) and ``global`` statements, and
fails on any not listed below: ``ALLOWED`` holds true process-wide facts and caches,
each with why; ``KNOWN`` the ones still to move into a stash (issue 25 item 5). Remove
an entry when you fix it; add to ``ALLOWED`` only with a reason that holds for every
kernel in the process.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCOPES = (ROOT / "plugins", ROOT / "contrib")
MUTABLE_CALLS = {
    "dict",
    "list",
    "set",
    "defaultdict",
    "OrderedDict",
    "Counter",
    "deque",
    "WeakKeyDictionary",
    "WeakValueDictionary",
    "WeakSet",
}

# (file, name) -> why it is process-wide by nature.
ALLOWED: dict[tuple[str, str], str] = {
    ("ketch_crypto/kernel_keyring.py", "_libc"): "the C library's handle: one per process",
    ("ketch_crypto/kernel_keyring.py", "_numbers"): "the C library's handle: one per process",
    ("ketch_crypto/kernel_keyring.py", "_probed"): "whether the OS has a kernel keyring",
    ("ketch_crypto/wrapped.py", "_ARGON2"): "a module imported on first use",
    ("ketch_crypto/passphrases.py", "_taken"): (
        "the process's environment variables, read once and removed from os.environ"
    ),
    ("ketch_shell_kit/grammar/scripts.py", "_SED_SIMPLE"): "a constant set of sed commands",
    ("ketch_shell_kit/__init__.py", "_RECENT"): (
        "the last few analyses, each found only by the very access object it was made for "
        "(identity, held alive while listed) with the same text, cwd and workspace"
    ),
    ("ketch_crypto/manager.py", "_KEKS"): (
        "keyed by a wrapped-key file's random salt and kept only once it opened that file: "
        "it opens nothing else, whatever the kernel (docs/storage.md)"
    ),
    ("ketch_crypto/manager.py", "_CHECKED"): (
        "the salts KETCH_PASSPHRASE (the process's, read once) was checked against"
    ),
    ("ketch_crypto/manager.py", "_FAILED"): (
        "only failures no kernel of the process can undo: a wrong KETCH_PASSPHRASE, or the "
        "person at the process's terminal mistyping or declining it"
    ),
    ("ketch_tool_kit/files.py", "_backends"): (
        "keyed by session id (unique across kernels), attached and detached by its session"
    ),
    ("ketch_shell/process.py", "GROUPS"): (
        "the process groups this OS process started (pgid -> its session id, unique across "
        "kernels): each session's end kills its own, the process's exit (atexit) all"
    ),
    ("ketch_shell/process.py", "REAPED"): (
        "which of this OS process's child process groups a reaper leads (a fact of the pgid)"
    ),
    ("ketch_context_kit/budget.py", "_SIZES"): (
        "keyed by a live message object (immutable; a weak reference drops the entry): "
        "its size is a function of the message alone"
    ),
    ("ketch_context_kit/request.py", "_SPECS"): (
        "keyed weakly by the tool object: its spec is a function of that object alone, "
        "found only by a kernel holding the tool"
    ),
    ("ketch_git_kit/programs.py", "_MEMO"): (
        "keyed by the directory, the git binary and git's whole environment, and reused "
        "only while every file git read is unchanged (stat): the same for every kernel"
    ),
    ("ketch_policy_kit/protected.py", "_CONFIG_CACHE"): (
        "keyed by the git directory, the git binary, git's whole environment and the stat "
        "of every config file it reads: the same answer for every kernel"
    ),
    ("ketch_policy_kit/protected.py", "_FILE_CACHE"): (
        "a config file's parsed content, reused only while its stat is unchanged"
    ),
    ("ketch_policy_kit/protected.py", "_CONFIGURED"): (
        "keyed by the workspace, the kernel's settings tables, each config file's path and "
        "stat, and PATH: every input of the answer, so no kernel gets another's"
    ),
    ("ketch_sandbox/__init__.py", "_LEFTOVERS"): (
        "mask directories no command will report on, closed when the process exits"
    ),
    ("ketch_sandbox/masks.py", "_SHARED"): (
        "the process's one inotify watch (a descriptor and its reader thread); each mask "
        "set sees the opens of its own watches only"
    ),
    ("ketch_sandbox/masks.py", "_PENDING"): (
        "mask directories still being removed, removed at the latest when the process exits"
    ),
    ("ketch_sandbox/dependencies.py", "_SCANNED"): (
        "keyed by a site-packages directory and its mtime: what it names is a fact of the "
        "file system"
    ),
    ("ketch_sandbox/trees.py", "_INDEXES"): (
        "one index per tree and kind (inotify-kept): what a tree holds is a fact of the "
        "file system, secrets classified by ketch_secret_kit's fixed rules"
    ),
    ("ketch_sandbox/view.py", "_TOOLCHAINS"): (
        "keyed by home, workspace and every variable it reads (PATH, XDG_RUNTIME_DIR, the "
        "toolchain variables), checked against the file system on use"
    ),
    ("ketch_sandbox/view.py", "_PLANS"): (
        "the last plan per workspace, reused only when every input matches (the index, "
        "the kernel's configured paths, PATH and HOME, each repository's config stat)"
    ),
    ("ketch_sandbox/planted.py", "_ACCEPTED"): (
        "per workspace, the writes a person authorized: the files are shared by every "
        "kernel working there, and a write one kernel authorized is no plant to another"
    ),
    ("ketch_store/writers.py", "_PROCESS"): (
        "the writer locks this OS process holds (flock locks an open file): the process's "
        "stores share a session's claim (a shell resuming the session it is in, attach), "
        "while other processes are excluded"
    ),
    ("ketch_early_request_kit/handoff.py", "LAUNCHED"): (
        "the request the console script sent at this process's launch: one launch per "
        "process, taken (and so emptied) by the process's first request, whichever kernel"
    ),
    ("ketch_early_request_kit/handoff.py", "_ARMED"): (
        "what the plugin saw of the process's first prompt, for the record of the "
        "process's first request: one per process, as the launch it is compared with"
    ),
    ("ketch_secret_kit/files.py", "_LAST"): (
        "keyed by file identity (path, device, inode, size, mtime); the value names a "
        "fixed rule, never the content: the same answer for every kernel"
    ),
}

# (file, name) -> where it goes: state still to move into a stash (none today).
KNOWN: dict[tuple[str, str], str] = {}


def module_state(path: Path) -> list[tuple[str, int]]:
    """(name, line) of each module-level mutable binding and each ``global`` name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        target, value = None, None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if not isinstance(target, ast.Name) or value is None:
            continue
        name = target.id
        literal = isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp))
        call = isinstance(value, ast.Call) and (
            ast.unparse(value.func).rsplit(".", 1)[-1] in MUTABLE_CALLS
        )
        empty = isinstance(value, (ast.Dict, ast.List, ast.Set)) and not (
            value.keys if isinstance(value, ast.Dict) else value.elts
        )
        # An upper-case name is a constant by convention, unless what it holds starts
        # empty or is built by a container call: then it is filled at run time.
        if name == "__all__" or (name.isupper() and not (empty or call)):
            continue
        if literal or call or isinstance(value, ast.SetComp):
            found.append((name, node.lineno))
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found += [(name, node.lineno) for name in node.names]
    return found


def _where(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    if parts[0] == "plugins":
        return "/".join(parts[1:])
    return "/".join(parts)


def test_no_module_level_mutable_state() -> None:
    seen: set[tuple[str, str]] = set()
    new = []
    for scope in SCOPES:
        for path in sorted(scope.rglob("*.py")):
            if {"tests", "__pycache__"} & set(path.parts):
                continue
            for name, line in module_state(path):
                key = (_where(path), name)
                seen.add(key)
                if key not in ALLOWED and key not in KNOWN:
                    new.append(f"{key[0]}:{line}: {name}")
    assert not new, (
        "module-level mutable state: keep it in kernel.stash / session.stash (StashKey), "
        "or justify it in ALLOWED:\n  " + "\n  ".join(sorted(set(new)))
    )
    stale = sorted((set(ALLOWED) | set(KNOWN)) - seen)
    assert not stale, f"gone: remove from {Path(__file__).name}: {stale}"


def test_the_check_finds_module_state(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import weakref\n"
        "LIMITS = {'a': 1}\n"  # a constant by convention
        "SEEN = {}\n"  # upper-case, but filled at run time
        "_seen = set()\n"
        "_by_kernel = weakref.WeakKeyDictionary()\n"
        "_cache: dict[str, int] = {}\n"
        "name = 'x'\n"
        "def f():\n"
        "    global name\n"
        "    name = 'y'\n",
        encoding="utf-8",
    )
    assert [n for n, _ in module_state(sample)] == [
        "SEEN",
        "_seen",
        "_by_kernel",
        "_cache",
        "name",
    ]


def test_no_test_switches_in_production_code() -> None:
    """Fault injection is installed by tests (a plugin they load, a hook it implements),
    never read from a ``KETCH_TEST_*`` variable by the code that ships."""
    found = []
    for scope in (*SCOPES, ROOT / "kernel" / "ketch"):
        for path in sorted(scope.rglob("*.py")):
            if {"tests", "testing", "__pycache__"} & set(path.parts):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "KETCH_TEST_" in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}")
    assert not found, "production code reads test switches:\n  " + "\n  ".join(found)
