"""git: global options, then a subcommand with its own grammar.

Read-only subcommands (status, diff, log, show, grep, blame, ...) are proven only
where git reads no configuration but the user's: in the workspace's own repository,
with no ``-C``/``--git-dir``/``--work-tree`` elsewhere and no ``-c`` other than a few
display settings, and while the repository's own config (and what it includes) names no
program and holds no hook script the person has not trusted (``ketch trust``). A repository *inside* the workspace (a nested ``.git``, a bare
repository written as plain files, a submodule) can carry its own config, whose
textconv, diff drivers, fsmonitor, pager and aliases run code; git in one is never
proven, and the guards ask (the code could do anything). The other subcommands are
known by what they do: they change the repository or the work tree, or use the
network.

This module is git's *handler* (code); the grammar of git and of each subcommand, and
what the other subcommands do, are data (``grammar.json``: ``programs.git`` and
``handler_tables.git``, read through :func:`.table.git_facts`).
"""

from __future__ import annotations

import os
import struct
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ketch_shell_kit.grammar.spec import Program

if TYPE_CHECKING:  # pragma: no cover
    from ketch_shell_kit.parse import Walker
    from ketch_shell_kit.words import Word


def read_only_subcommands() -> dict[str, Program]:
    """git's subcommands that are read-only in every form the grammar accepts (the
    others in the table are read-only in their listing forms only)."""
    from ketch_shell_kit.grammar import TABLE
    from ketch_shell_kit.grammar.table import git_facts

    listing = git_facts().listing
    return {sub: spec for sub, spec in TABLE["git"].subcommands.items() if sub not in listing}


def safe_config(value: str) -> bool:
    """A ``-c key=value`` that only changes how output looks (pager.*: only false)."""
    from ketch_shell_kit.grammar.table import git_facts

    if not git_facts().display_config.match(value):
        return False
    key, _, setting = value.partition("=")
    return not key.lower().startswith("pager.") or setting.lower() in ("false", "no", "off", "0")


def foreign_repository(start: Path, workspace: Path | None) -> tuple[str, bool] | None:
    """Why git started in ``start`` is not in the workspace's own repository, and
    whether the repository it would use could have been planted inside the workspace
    (then its configuration may run anything: the guards ask); None when it is the
    workspace's own."""
    if workspace is None:
        return "git outside a known workspace", False
    root = Path(os.path.realpath(workspace))
    here = Path(os.path.realpath(start))
    if not here.is_relative_to(root):
        return f"git in {start}, outside the workspace", False
    if not here.is_dir():
        return f"git in {start}, which does not exist (yet)", True
    current = here
    while current != root:
        if (
            current.name == ".git"
            or os.path.lexists(current / ".git")
            or _looks_like_git_dir(current)
        ):
            return (
                f"git in {current}, a repository inside the workspace with its own configuration",
                True,
            )
        current = current.parent
    if _looks_like_git_dir(root) and not os.path.lexists(root / ".git"):
        return "git in a workspace that is itself a bare repository", True
    if not os.path.lexists(root / ".git"):
        return "git outside the workspace's own repository (none at its root)", False
    return None


def untrusted_programs(workspace: Path | None) -> list[str]:
    """The programs the workspace repository's own config (and the files it includes)
    and its hook scripts name that the person has not trusted (``ketch_git_kit``): git
    there may run any of them, so git is not proven while there is one."""
    if workspace is None:
        return []
    from ketch_git_kit.trust import untrusted_programs as found

    return found(workspace)


def _looks_like_git_dir(path: Path) -> bool:
    return (
        os.path.isfile(path / "HEAD")
        or (os.path.isdir(path / "objects") and os.path.isdir(path / "refs"))
        or os.path.isfile(path / "config")
        and os.path.isdir(path / "refs")
    )


MAX_INDEX_ENTRIES = 200_000


def _parse_index(data: bytes) -> list[str] | None:
    """The paths of a git index file (versions 2, 3 and 4; SHA-1 or SHA-256 object
    names), or None when it cannot be read exactly."""
    if len(data) < 12 or data[:4] != b"DIRC":
        return None
    version, count = struct.unpack(">II", data[4:12])
    if version not in (2, 3, 4) or count > MAX_INDEX_ENTRIES:
        return None
    for hash_size in (20, 32):
        names = _index_entries(data, version, count, hash_size)
        if names is not None:
            return names
    return None


def _index_entries(data: bytes, version: int, count: int, hash_size: int) -> list[str] | None:
    names: list[str] = []
    offset = 12
    previous = b""
    try:
        for _ in range(count):
            start = offset
            offset += (
                40 + hash_size
            )  # ctime, mtime, dev, ino, mode, uid, gid, size; the object name
            (flags,) = struct.unpack(">H", data[offset : offset + 2])
            offset += 2
            if flags & 0x4000:
                if version < 3:
                    return None
                offset += 2  # extended flags
            if version == 4:
                strip, offset = _varint(data, offset)
                end = data.index(b"\x00", offset)
                if strip > len(previous):
                    return None
                name = previous[: len(previous) - strip] + data[offset:end]
                offset = end + 1
            else:
                end = data.index(b"\x00", offset)
                name = data[offset:end]
                length = flags & 0x0FFF
                if length != 0x0FFF and length != len(name):
                    return None
                offset = start + ((end - start + 8) // 8) * 8  # NUL padded to a multiple of 8
            if not name or b"\x00" in name or name.startswith(b"/"):
                return None
            previous = name
            names.append(name.decode("utf-8", "surrogateescape"))
    except (struct.error, ValueError):
        return None
    if offset > len(data) - hash_size:
        return None
    return names


def _varint(data: bytes, offset: int) -> tuple[int, int]:
    """git's offset encoding (index v4's prefix length)."""
    byte = data[offset]
    offset += 1
    value = byte & 0x7F
    while byte & 0x80:
        byte = data[offset]
        offset += 1
        value = ((value + 1) << 7) | (byte & 0x7F)
    return value, offset


@lru_cache(maxsize=16)
def _index_of(index: str, mtime_ns: int, size: int) -> tuple[str, ...] | None:
    try:
        with open(index, "rb") as handle:
            data = handle.read(256 << 20)
    except OSError:
        return None
    names = _parse_index(data)
    return tuple(names) if names is not None else None


def git_dir(repository: str | os.PathLike[str]) -> str | None:
    """The git directory of a work tree: its ``.git``, or where a ``.git`` file (a linked
    worktree, a submodule) points; None when a ``.git`` file cannot be read."""
    dotgit = os.path.join(os.path.realpath(repository), ".git")
    if not os.path.isfile(dotgit):
        return dotgit
    try:
        with open(dotgit, encoding="utf-8", errors="replace") as handle:
            first = handle.readline().strip()
    except OSError:
        return None
    if not first.startswith("gitdir:"):
        return None
    return os.path.join(os.path.dirname(dotgit), first.removeprefix("gitdir:").strip())


def index_names(repository: str | os.PathLike[str]) -> tuple[str, ...] | None:
    """The paths tracked in ``repository``'s index ((): no index; None: unreadable)."""
    dotgit = git_dir(repository)
    if dotgit is None:
        return None
    index = os.path.join(dotgit, "index")
    try:
        info = os.stat(index)
    except FileNotFoundError:
        return ()
    except OSError:
        return None
    return _index_of(index, info.st_mtime_ns, info.st_size)


MAX_CONTENT_CHECKED = 20_000


def tracked_secrets(workspace: Path | None) -> tuple[str, ...]:
    """Tracked files that are secrets by name or content (git can print them): a few
    of them, or the reason the index cannot be read. Content is checked for the first
    :data:`MAX_CONTENT_CHECKED` tracked files (names for every one)."""
    if workspace is None:
        return ()
    from ketch_secret_kit import content_secret, secret_name

    root = os.path.realpath(workspace)
    names = index_names(root)
    if names is None:
        return ("(the index, which ketch cannot read)",)
    found: list[str] = []
    for count, name in enumerate(names):
        if secret_name(name.rsplit("/", 1)[-1]) or (
            count < MAX_CONTENT_CHECKED and content_secret(os.path.join(root, name))
        ):
            found.append(name)
            if len(found) >= 5:
                break
    return tuple(found)


def git(
    walker: Walker,
    spec: Program,
    argv: list[Word],
    assignments: tuple[tuple[str, Word], ...],
    stdin_script: str | None,
    extra_args: bool,
) -> None:  # noqa: C901
    from ketch_shell_kit import getopt
    from ketch_shell_kit.grammar.table import git_facts
    from ketch_shell_kit.interpret import Builder, assign, dash_globs, read_options, typed

    facts = git_facts()

    builder = Builder(walker, argv, assignments, extra_args=extra_args)
    args = list(argv[1:])
    parsed = getopt.parse(spec, args)
    read_options(builder, spec, parsed)
    starts = list(walker.cwds)
    for option, value, _ in parsed.options:
        if option.type == "cwd" and value is not None:
            if not value.static:
                builder.not_proven(
                    f"git -C {value.source}: a directory only known at run time", hide=True
                )
                starts = []
            else:
                starts = [
                    Path(os.path.normpath(os.path.join(c, value.value or ""))) for c in starts
                ]
    for key, value in assignments:
        if key == "GIT_OPTIONAL_LOCKS" and value.value == "0":
            continue
        if key.startswith("GIT_"):
            builder.not_proven(f"it sets {key} for git, which can change what git runs", hide=True)
    operands = parsed.operands
    if extra_args:
        builder.not_proven("git gets arguments only known at run time", hide=True)
    if not operands:
        builder.done()
        return
    sub_word = operands[0]
    if not sub_word.static:
        builder.not_proven(
            f"the git subcommand is only known at run time ({sub_word.source})", hide=True
        )
        builder.done()
        return
    sub = sub_word.value or ""
    rest = list(operands[1:])
    for start in starts:
        found = foreign_repository(start, walker.workspace)
        if found:
            builder.not_proven(found[0], hide=found[1])
    if not starts:
        builder.not_proven("git in a directory only known at run time", hide=True)
    grammar = spec.subcommands.get(sub)
    if grammar is None:
        _other(builder, sub, rest, starts)
        builder.done()
        return
    untrusted = untrusted_programs(walker.workspace)
    if untrusted:
        more = f" and {len(untrusted) - 1} more" if len(untrusted) > 1 else ""
        builder.not_proven(
            f"the repository's config names a program git may run that you have not trusted "
            f"({untrusted[0]}{more}; `ketch trust` shows them)"
        )
    no_locks = any("--no-optional-locks" in o.names for o, _, _ in parsed.options) or any(
        k == "GIT_OPTIONAL_LOCKS" and v.value == "0" for k, v in assignments
    )
    builder.index_refresh = sub in facts.index_refresh and not no_locks
    sub_parsed = getopt.parse(grammar, rest)
    ops = read_options(builder, grammar, sub_parsed)
    operands = sub_parsed.operands
    dash_globs(builder, operands)
    if sub in facts.listing:
        _listing(builder, sub, grammar, sub_parsed, operands)
    if sub in facts.prints_content:
        secrets = tracked_secrets(walker.workspace)
        if secrets:
            builder.not_proven(
                f"the repository tracks a secret-looking file ({secrets[0]}), which git {sub} can print"
            )
    if sub == "grep":
        _grep_walk(builder, sub_parsed)
    pairs, error = assign(ops, operands)
    if error:
        builder.not_proven(f"git {sub}: {error}")
    for kind, word in pairs:
        typed(builder, kind, word, f"git {sub} {word.source}")
    if sub == "grep" and not any(u.kind in ("tree", "vtree") for u in builder.uses):
        builder.use("tree", _word("."), "git grep (the files it searches)")
    if sub in facts.prints_config:
        config = repository_config(walker.workspace)
        if config is not None:
            builder.use("read", _word(config), f"git {sub} prints the repository's configuration")
    builder.done()


def repository_config(workspace: Path | None) -> str | None:
    """The workspace repository's own config file (its common dir's, for a worktree)."""
    if workspace is None:
        return None
    gitdir = git_dir(workspace)
    if gitdir is None:
        return None
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8", errors="replace") as handle:
            gitdir = os.path.join(gitdir, handle.read().strip())
    except OSError:
        pass
    return os.path.realpath(os.path.join(gitdir, "config"))


def _grep_walk(builder: object, parsed: object) -> None:
    """git grep reads the files its options select (tracked, untracked, ignored, or
    every file with --no-index): the tree uses carry that walk (see reach.py)."""
    from ketch_shell_kit import reach
    from ketch_shell_kit.interpret import Builder

    assert isinstance(builder, Builder)
    options = [(o.label, v.value if v is not None else None) for o, v, _ in parsed.options]  # type: ignore[attr-defined]
    if any(name == "--recurse-submodules" for name, _ in options):
        builder.not_proven(
            "git grep --recurse-submodules reads the submodules' files too", hide=True
        )
    builder.walk = reach.git_grep_walk(options)


def _listing(
    builder: object, sub: str, grammar: Program, parsed: object, operands: list[Word]
) -> None:
    from ketch_shell_kit.grammar.table import git_facts
    from ketch_shell_kit.interpret import Builder

    assert isinstance(builder, Builder)
    if sub in ("branch", "tag"):
        lists = any(o.names[0] in ("-l",) or "--list" in o.names for o, _, _ in parsed.options)  # type: ignore[attr-defined]
        if operands and not lists:
            builder.not_proven(f"git {sub} with a name creates a {sub}")
        return
    if sub == "config":
        if any("write" in o.tags or o.type == "write" for o, _, _ in parsed.options):  # type: ignore[attr-defined]
            return  # already not proven, with the option named
        reading = {
            "--get",
            "--get-all",
            "--get-regexp",
            "--get-urlmatch",
            "--list",
            "--get-color",
            "--get-colorbool",
        }
        flags = {n for o, _, _ in parsed.options for n in o.names}  # type: ignore[attr-defined]
        positional = [w.value for w in operands]
        if (
            flags & reading
            or positional[:1] in (["get"], ["list"])
            or (len(positional) == 1 and positional[0] not in ("edit",))
        ):
            return
        builder.not_proven("git config with a value writes the repository's configuration")
        builder.use("write", _word(".git/config"), "git config")
        return
    first = (
        operands[0].value if operands and operands[0].static else (None if not operands else "?")
    )
    if first not in (git_facts().listing.get(sub) or ()):
        builder.not_proven(f"git {sub} {first or ''} changes the repository".replace("  ", " "))


def _other(builder: object, sub: str, rest: list[Word], starts: list[Path]) -> None:
    from ketch_shell_kit.grammar.table import git_facts
    from ketch_shell_kit.interpret import Builder

    assert isinstance(builder, Builder)
    facts = git_facts()
    if sub in facts.network:
        builder.network = True
        builder.not_proven(f"git {sub} uses the network")
    if sub in facts.files:
        builder.not_proven(f"git {sub} writes files the analysis does not follow", hide=True)
    elif sub in facts.worktree:
        builder.not_proven(f"git {sub} changes the repository or its work tree")
        for start in starts:
            builder.use("write", _word(str(start)), f"git {sub} work tree")
    elif sub not in facts.network:
        builder.not_proven(f"git {sub}: a subcommand (or alias) ketch does not know", hide=True)


def _word(text: str) -> Word:
    from ketch_shell_kit.words import literal

    return literal(text)
