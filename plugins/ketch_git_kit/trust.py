"""The repository's programs as trust items (``ketch_trust_kit``): what ``ketch trust``
shows of a repository, and what the shell policy checks before the model's ``git``
runs there.

Each program named in the repository's own config (or a file it includes) is one item
— its key, value and the file it is set in, plus the workspace files its command line
runs and, for an include, the included file's content — and so is each hook script
git would run. A user's own ``~/.gitconfig`` is theirs and is not listed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ketch_git_kit.locate import find_repository
from ketch_git_kit.programs import Program, RepositoryPrograms, include_target, repository_programs

if TYPE_CHECKING:  # pragma: no cover
    from ketch_trust_kit import TrustItem


def _where(path: str, workspace: Path) -> str:
    """``path`` as an item names it: relative to the workspace; in a linked worktree, a
    file of the shared git directory as the main work tree names it (``.git/config``),
    so that an identical program is the same item in both (docs/trust.md)."""
    try:
        return Path(path).relative_to(workspace).as_posix()
    except ValueError:
        pass
    repo = find_repository(workspace)
    if repo is not None and repo.common_dir != repo.git_dir and repo.common_dir.name == ".git":
        try:
            return (
                Path(".git") / Path(os.path.realpath(path)).relative_to(repo.common_dir)
            ).as_posix()
        except ValueError:
            pass
    return path


def program_item(program: Program, workspace: Path) -> TrustItem:
    from ketch_trust_kit import make_item

    target = include_target(program)
    files = [Path(target)] if target else []
    value = program.value
    shows = f"{program.key} = {value}"
    if target:
        shows += f"  (reads {_where(target, workspace)})"
    return make_item(
        "git " + program.what,
        program.key,
        _where(program.origin, workspace) or "git config",
        {"key": program.key, "value": value},
        shows,
        workspace=workspace,
        command=None if target else value.lstrip("!"),
        files=files,
        note="git runs it when you (or a tool) run git here; ketch's own git never does",
    )


def hook_item(script: Path, workspace: Path) -> TrustItem:
    from ketch_trust_kit import make_item

    where = _where(str(script), workspace)
    return make_item(
        "git hook",
        script.name,
        where,
        {"hook": script.name},
        f"{where} (git runs it on {script.name.replace('-', ' ')})",
        workspace=workspace,
        files=[script],
        note="git runs it when you (or a tool) run git here; ketch's own git never does",
    )


def repository_items(
    workspace: Path,
    environ: Mapping[str, str] | None = None,
    found: RepositoryPrograms | None = None,
) -> list[TrustItem]:
    """The items of the repository ``workspace`` is in (none outside a repository)."""
    workspace = Path(os.path.realpath(workspace))
    found = found if found is not None else repository_programs(workspace, environ, avoid=workspace)
    items = [program_item(p, workspace) for p in found.programs]
    items += [hook_item(h, workspace) for h in found.hooks]
    return items


def untrusted_programs(workspace: Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """One line for each program (or hook script) the repository of ``workspace``
    names that the person has not pinned, or why the repository cannot be read; []
    when git there would run nothing of the repository's but what was trusted."""
    from ketch_trust_kit import PinStore, TrustStoreError

    real = Path(os.path.realpath(workspace))
    found = repository_programs(real, environ, avoid=real)
    if found.problem:
        return [f"its config cannot be read ({found.problem})"]
    if not found:
        return []
    try:
        pins = PinStore().pins(real)
    except TrustStoreError as exc:
        return [str(exc)]
    return [
        item.shows for item in repository_items(real, environ, found) if item.digest not in pins
    ]
