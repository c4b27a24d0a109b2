"""Protected paths: what in a workspace makes something run later, outside any sandbox.

A command that writes one of these plants code that runs when the person (or their
tools) next use the workspace: their next ``git status`` or ``git commit``, ketch's or
another agent's next session, opening the folder in an editor, entering it in a shell.
So the hard guards ask before any tool writes one (in every profile), and the sandbox
makes them read-only whether or not they exist yet (see docs/sandbox.md).

Three sources, one answer (``Protected``: a path and why it matters):

* **names**, at any depth: ``.git`` (directory, file or link), ``.ketch``, ``.claude``,
  ``.vscode``, ``.idea``, ``.husky``, ``.envrc``, ``.gitconfig*``, ``.mcp.json``
  (:data:`NAMES`, :func:`protected_name`);
* **each repository's own config**: the ``core.hooksPath`` directory and every file
  pulled in by ``include.path``/``includeIf.*.path``, read with ``git config --list
  --show-origin`` (git parses; nothing is run: ``git config`` starts no program), for
  the targets inside the workspace (:func:`repository_paths`);
* **configured commands**: every file a configured hook or MCP server executes -- the
  program and the scripts and modules named on its command line -- from ketch's
  settings, the workspace's raw ``.ketch/config.toml`` (it runs once trusted),
  ``.claude/settings*.json``, ``~/.claude/settings.json`` and ``.mcp.json``
  (:func:`configured_paths`).

A library: it registers nothing, so the essential ``guards`` plugin and the ``sandbox``
plugin share it without importing each other.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ketch_policy_kit.globs import match_name
from ketch_policy_kit.paths import is_within, resolve

GIT_WHY = "a git directory: its config, hooks and attributes run programs when you or your tools use git there"
# name pattern (lowercased) -> what it is, and why a planted one matters.
NAMES: dict[str, str] = {
    ".git": GIT_WHY,
    ".ketch": "ketch's workspace config: its hooks, MCP servers and commands run in a later session once the workspace is trusted",
    ".claude": "Claude Code's project config: its hooks, MCP servers and !`cmd` commands run in Claude Code or ketch later",
    ".vscode": "VS Code's folder settings: tasks and settings run commands when the folder is opened or built",
    ".idea": "a JetBrains project: run configurations and tools run when the project is opened or built",
    ".husky": "git hooks (husky): git commit runs them where core.hooksPath points here",
    ".envrc": "direnv's script: your shell runs it on entering the directory (once allowed)",
    ".gitconfig*": "git config: a repository that includes it runs the programs it names",
    ".mcp.json": "MCP servers for Claude Code and other agents: started in their next session",
}
# What the sandbox reserves at the workspace root when absent (a name, not a glob).
ROOT_NAMES = (
    ".git",
    ".ketch",
    ".claude",
    ".vscode",
    ".idea",
    ".husky",
    ".envrc",
    ".gitconfig",
    ".mcp.json",
)
HOOKS_PATH_WHY = (
    "the repository's git hooks directory (core.hooksPath): git commit runs what it holds"
)
INCLUDE_WHY = "included into a repository's git config (include.path): its settings run programs"


@dataclass(frozen=True)
class Protected:
    path: Path  # absolute, resolved
    why: str


def protected_name(name: str) -> str | None:
    """Why an entry with this name is protected, or None."""
    if not name.startswith("."):
        return None  # every protected name is a dot name (and most names are not)
    lowered = name.lower()
    for pattern, why in NAMES.items():
        if lowered == pattern or ("*" in pattern and match_name(lowered, pattern)):
            return why
    return None


def protected_component(path: Path, root: Path) -> Protected | None:
    """The first component of ``path`` below ``root`` (or anywhere, outside it) with a
    protected name: ``src/.vscode/tasks.json`` -> ``src/.vscode``."""
    base = root if is_within(path, root) else Path(path.anchor or "/")
    current = base
    for part in path.relative_to(base).parts:
        current = current / part
        why = protected_name(part)
        if why is not None:
            return Protected(current, why)
    return None


def covering(path: Path, extra: Iterable[Protected]) -> Protected | None:
    """The protected extra path that is ``path`` or holds it."""
    for item in extra:
        if path == item.path or is_within(path, item.path):
            return item
    return None


# --- each repository's own config ---------------------------------------------------------------


_CONFIG_CACHE: dict[tuple[object, ...], tuple[tuple[str, str, str], ...]] = {}
_CONFIG_LOCK = threading.Lock()


def _stamp(path: str) -> tuple[object, ...]:
    try:
        info = os.stat(path)
    except OSError:
        return ()
    return (info.st_ino, info.st_mtime_ns, info.st_size)


def git_config_entries(
    gitdir: Path, environ: Mapping[str, str] | None = None, avoid: Path | None = None
) -> list[tuple[str, str, str]]:
    """``(origin file, key, value)`` for every setting git sees in the repository at
    ``gitdir`` (global, the repository's own, and what they include). ``git config``
    only parses: it runs no program; it runs as ketch's every git does (the git kit's
    environment, a git found outside ``avoid``, the workspace). [] when git is missing
    or refuses."""
    from ketch_git_kit import git_executable

    environ = os.environ if environ is None else environ
    git = git_executable(environ, avoid)
    if git is None:
        return []
    files = [os.path.join(gitdir, "config"), os.path.join(gitdir, "config.worktree")]
    common = gitdir / "commondir"
    if common.is_file():
        with contextlib.suppress(OSError):
            files.append(os.path.join(gitdir, common.read_text(encoding="utf-8").strip(), "config"))
    from ketch_git_kit.env import GitDidNotRun, safe_environment, spawn

    # The user's own config files are read too: their stamps, git and the whole
    # environment git gets are in the key, so the answer holds for every kernel.
    env = safe_environment(environ)
    home = env.get("HOME", "")
    if home:
        files += [os.path.join(home, ".gitconfig"), os.path.join(home, ".config", "git", "config")]
    key = (str(gitdir), git, tuple(sorted(env.items())), tuple(_stamp(f) for f in files))
    with _CONFIG_LOCK:
        cached = _CONFIG_CACHE.get(key)
    if cached is not None:
        return list(cached)

    argv = [git, f"--git-dir={gitdir}", "config", "--list", "--show-origin", "-z"]
    try:
        done = spawn(argv, Path("/"), environ, 10, "git config")
    except GitDidNotRun:
        return []
    entries: list[tuple[str, str, str]] = []
    if done.returncode == 0:
        fields = done.stdout.decode("utf-8", "surrogateescape").split("\0")
        for i in range(0, len(fields) - 1, 2):
            origin, _, rest = fields[i], "", fields[i + 1]
            name, _, value = rest.partition("\n")
            entries.append((origin.removeprefix("file:"), name.lower(), value))
    with _CONFIG_LOCK:
        if len(_CONFIG_CACHE) > 256:
            _CONFIG_CACHE.clear()
        _CONFIG_CACHE[key] = tuple(entries)
    return entries


def _expand(value: str, base: Path, home: Path) -> Path:
    if value.startswith("~/"):
        return resolve(home / value[2:])
    return resolve(base / value)


def repository_paths(
    gitdir: Path,
    worktree: Path | None,
    workspace: Path,
    environ: Mapping[str, str] | None = None,
) -> list[Protected]:
    """The ``core.hooksPath`` directory and the ``include.path`` targets of the
    repository at ``gitdir``, where they lie inside ``workspace`` (existing or not)."""
    environ = os.environ if environ is None else environ
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    root = resolve(workspace)
    found: list[Protected] = []
    hooks: str | None = None
    for origin, name, value in git_config_entries(gitdir, environ, root):
        if not value:
            continue
        if name == "core.hookspath":
            hooks = value  # the last one wins, as in git
        elif name == "include.path" or (name.startswith("includeif.") and name.endswith(".path")):
            base = Path(origin).parent if origin and origin != "command line:" else gitdir
            target = _expand(value, base, home)
            if is_within(target, root):
                found.append(Protected(target, INCLUDE_WHY))
    if hooks is not None:
        # Relative to the work tree's top (git runs hooks there); bare: the git dir.
        target = _expand(hooks, worktree if worktree is not None else gitdir, home)
        if is_within(target, root):
            found.append(Protected(target, HOOKS_PATH_WHY))
    return found


# --- what configured hooks and MCP servers execute --------------------------------------------


SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".ps1")  # fmt: skip
INTERPRETERS = ("python", "node", "bash", "sh", "zsh", "dash", "ksh", "ruby", "perl", "php", "deno", "bun", "tsx", "ts-node", "lua", "pwsh", "uv", "poetry", "pipenv", "pdm", "hatch")  # fmt: skip
_OPERATORS = frozenset({"&&", "||", ";", "|", "&", "|&", "(", ")", "!", "{", "}", ";;"})


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: the plain words are the best guess
        return command.split()


def _interpreter(program: str) -> bool:
    name = os.path.basename(program)
    return any(
        name == i or (name.startswith(i) and name[len(i) :].replace(".", "").isdigit())
        for i in INTERPRETERS
    )


def _inside(text: str, root: Path) -> list[Path]:
    """``text`` as a workspace path: as written (a link is itself a target) and resolved."""
    written = Path(os.path.normpath(root / os.path.expanduser(text)))
    found = [p for p in {written, resolve(written)} if is_within(p, root) and p != root]
    return sorted(found)


def _on_path(name: str, root: Path, environ: Mapping[str, str]) -> Iterator[Path]:
    """Where a bare program name is or would be found inside the workspace: ``DIR/name``
    for each PATH entry in the workspace up to the first that has it (one made in an
    earlier entry would be found first), whether it exists or not."""
    for entry in environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry) or not os.path.isdir(entry):
            continue
        candidate = os.path.join(entry, name)
        exists = os.path.isfile(candidate) and os.access(candidate, os.X_OK)
        for path in _inside(candidate, root):
            if not path.is_dir():
                yield path
        if exists:
            return


def executed_files(argv: list[str], workspace: Path, environ: Mapping[str, str]) -> Iterator[Path]:
    """The workspace files a command line executes: its programs (a path, or a bare name
    PATH finds inside the workspace), the scripts an interpreter is given (``python
    tools/x.py``, ``-m pkg.mod``), any other operand that is an executable file or a
    script by its suffix, and the same inside ``sh -c TEXT``. Directories never count."""
    root = resolve(workspace)
    project = {"CLAUDE_PROJECT_DIR": str(root), "KETCH_WORKSPACE": str(root), "PWD": str(root)}
    words = list(argv)
    program: str | None = None
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word in _OPERATORS:
            program = None
            continue
        if program is None and "=" in word and word.split("=", 1)[0].isidentifier():
            continue  # NAME=value before the program
        text = word
        for name, value in project.items():
            text = text.replace("${" + name + "}", value).replace("$" + name, value)
        if program is not None and " " in text.strip():
            words[index:index] = [";", *_words(text)]  # sh -c '...': read inside
            continue
        if program is None:
            program = text
            if "/" in text:
                yield from (p for p in _inside(text, root) if not p.is_dir())
            else:
                yield from _on_path(text, root, environ)
            continue
        if text == "-m" and _interpreter(program) and index < len(words):
            module = words[index].replace(".", "/")
            index += 1
            for candidate in (f"{module}.py", f"{module}/__main__.py"):
                yield from (p for p in _inside(candidate, root) if p.is_file())
            continue
        if text.startswith("-"):
            continue
        for path in _inside(text, root):
            if path.is_dir():
                continue
            scripted = _interpreter(program) or text.lower().endswith(SCRIPT_SUFFIXES)
            if (scripted and (path.is_file() or "/" in text)) or (
                path.is_file() and os.access(path, os.X_OK)
            ):
                yield path


def _command_lines(settings: Mapping[str, Any]) -> Iterator[tuple[str, list[str]]]:
    """(label, argv) for every hook and MCP server in a config mapping (ketch's tables,
    Claude Code's ``hooks``/``mcpServers``)."""
    hooks = settings.get("hooks")
    if isinstance(hooks, Mapping):
        for event, entries in hooks.items():
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, Mapping):
                    continue
                # Claude Code nests: {"matcher": ..., "hooks": [{"type": "command", ...}]}
                inner = entry.get("hooks")
                for hook in inner if isinstance(inner, list) else [entry]:
                    if isinstance(hook, Mapping) and isinstance(hook.get("command"), str):
                        args = hook.get("args")
                        argv = (
                            [hook["command"], *map(str, args)]
                            if isinstance(args, list)
                            else _words(hook["command"])
                        )
                        yield f"hook {event}", argv
    for key in ("mcp_servers", "mcpServers"):
        servers = settings.get(key)
        if not isinstance(servers, Mapping):
            continue
        for name, server in servers.items():
            if isinstance(server, Mapping) and isinstance(server.get("command"), str):
                args = server.get("args")
                argv = _words(server["command"]) + (
                    [str(a) for a in args] if isinstance(args, list) else []
                )
                yield f"MCP server {name}", argv


_FILE_CACHE: dict[str, tuple[tuple[object, ...], dict[str, Any]]] = {}


def _read_config(path: Path) -> dict[str, Any]:
    """A JSON or TOML config file as a mapping ({} when absent or unreadable), cached by stat."""
    stamp = _stamp(str(path))
    if not stamp:
        return {}
    cached = _FILE_CACHE.get(str(path))
    if cached is not None and cached[0] == stamp:
        return cached[1]
    data: Any = {}
    with contextlib.suppress(OSError, ValueError, UnicodeDecodeError):
        if path.stat().st_size <= 1 << 20:
            raw = path.read_bytes()
            if path.suffix == ".toml":
                import tomllib

                data = tomllib.loads(raw.decode("utf-8"))
            else:
                data = json.loads(raw)
    table = data if isinstance(data, dict) else {}
    _FILE_CACHE[str(path)] = (stamp, table)
    return table


def configured_paths(
    workspace: Path,
    sections: Mapping[str, Any],
    environ: Mapping[str, str] | None = None,
) -> list[Protected]:
    """Every workspace file a configured hook or MCP server executes. ``sections``:
    ketch's merged settings tables (``{"hooks": ..., "mcp_servers": ...}``); the
    workspace's own config files are read as well, trusted or not (they run once trusted)."""
    environ = os.environ if environ is None else environ
    root = resolve(workspace)
    home = Path(environ.get("HOME") or os.path.expanduser("~"))
    claude_home = Path(environ.get("CLAUDE_CONFIG_DIR") or home / ".claude")
    files = (
        root / ".ketch" / "config.toml",
        root / ".claude" / "settings.json",
        root / ".claude" / "settings.local.json",
        root / ".mcp.json",
        claude_home / "settings.json",
    )
    # Asked for every write the guards check: the same answer while nothing changed.
    # Keyed by every input (the settings, each file by path and stamp, PATH): the same
    # answer for every kernel in the process.
    key = (
        str(root),
        json.dumps(sections, sort_keys=True, default=str),
        tuple((str(p), _stamp(str(p))) for p in files),
        environ.get("PATH", ""),
    )
    cached = _CONFIGURED.get(key)
    if cached is not None and all(_stamp(str(p.path)) == stamp for p, stamp in cached):
        return [p for p, _ in cached]
    sources: list[tuple[str, Mapping[str, Any]]] = [("your config", sections)]
    for path in files:
        sources.append((str(path), _read_config(path)))
    found: dict[Path, Protected] = {}
    for _source, table in sources:
        for label, argv in _command_lines(table):
            for path in executed_files(argv, root, environ):
                found.setdefault(path, Protected(path, f"run by the configured {label}"))
    if len(_CONFIGURED) > 64:
        _CONFIGURED.clear()
    # With each path's stamp: a script created or removed later changes the answer.
    _CONFIGURED[key] = [(p, _stamp(str(p.path))) for p in found.values()]
    return list(found.values())


_CONFIGURED: dict[tuple[object, ...], list[tuple[Protected, tuple[object, ...]]]] = {}


# --- all of it, for one workspace -------------------------------------------------------------


def gitdir_of(dotgit: Path) -> Path | None:
    """The git directory a ``.git`` entry stands for: itself, or where a ``.git`` file
    (``gitdir: ...``) points, resolved; None when it is neither."""
    if dotgit.is_dir():
        return resolve(dotgit)
    try:
        with open(dotgit, encoding="utf-8", errors="replace") as handle:
            first = handle.readline(4096).strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    target = Path(first.removeprefix("gitdir:").strip())
    return resolve(target if target.is_absolute() else dotgit.parent / target)


def repositories_holding(path: Path, workspace: Path) -> Iterator[tuple[Path, Path]]:
    """(gitdir, work tree) of every repository whose work tree holds ``path``, from the
    innermost out to the workspace root (and the root's own, always)."""
    root = resolve(workspace)
    current = path if path.is_dir() else path.parent
    seen: set[Path] = set()
    while True:
        if is_within(current, root):
            gitdir = gitdir_of(current / ".git")
            if gitdir is not None and gitdir not in seen:
                seen.add(gitdir)
                yield gitdir, current
        if current == root or not is_within(current, root) or current.parent == current:
            break
        current = current.parent
    gitdir = gitdir_of(root / ".git")
    if gitdir is not None and gitdir not in seen:
        yield gitdir, root


def settings_tables(settings: Any) -> dict[str, Any]:
    """The tables that configure commands ketch runs, from a kernel's settings."""
    tables: dict[str, Any] = {}
    section = getattr(settings, "section", None)
    for name in ("hooks", "mcp_servers"):
        with contextlib.suppress(Exception):
            tables[name] = section(name) if section is not None else {}
    return tables


def protected_for_write(
    path: Path, workspace: Path, settings: Any, environ: Mapping[str, str] | None = None
) -> list[Protected]:
    """The protected paths a write to ``path`` must be checked against, besides the
    names: what configured hooks and MCP servers execute, and the hooks directory and
    include targets of the repositories holding ``path``."""
    environ = os.environ if environ is None else environ
    found = configured_paths(workspace, settings_tables(settings), environ)
    for gitdir, worktree in repositories_holding(path, workspace):
        found += repository_paths(gitdir, worktree, workspace, environ)
    return found
