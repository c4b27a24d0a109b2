"""Agent definitions: Markdown files with front matter, as Claude Code writes them.

Looked for in the workspace's ``.ketch/agents/`` and ``.claude/agents/``, then the user
config dir's ``agents/`` and ``~/.claude/agents/`` (each searched recursively; a
project's definition shadows a user's of the same name)::

    ---
    name: reviewer
    description: Reviews a change for bugs. Use after edits.
    tools: Read, Grep, Glob          # Claude Code's or ketch's names; omitted: all
    model: inherit                   # or a model of the parent's provider
    ---
    You are a careful code reviewer. ...

The body is the subagent's instructions. A definition only ever narrows: ``tools``,
``disallowedTools`` and ``permissionMode: plan`` take tools away, ``maxTurns`` lowers
the step limit; nothing in a file (least of all a repository's) grants anything. A
project's definition is still what the subagent is told, so it is offered only once
the person trusted that file (``ketch trust``; a changed file is held back again).
Two definitions are built in: ``general-purpose`` (every tool the parent has) and
``explore`` (read-only tools).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch_claude_kit.tool_names import lookup, split_list, why_unmapped

if TYPE_CHECKING:  # pragma: no cover
    from ketch_prompt_kit.markdown_files import Folder
    from ketch_trust_kit import TrustItem

DEFAULT = "general-purpose"
MAX_FILES = 500  # per folder: a repository cannot make ketch read forever
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass(frozen=True)
class Definition:
    name: str
    description: str
    prompt: str = ""
    tools: tuple[str, ...] | None = None  # the entries as written; None: the parent's tools
    disallowed: tuple[str, ...] = ()
    read_only: bool = False
    model: str | None = None
    max_turns: int | None = None
    source: str = "built-in"
    path: Path | None = None  # the file it was read from (None: built in)
    project: bool = False  # from the workspace or a plugin (not the user's own folders)
    # Where it is pinned (an installed plugin's TrustScope; None: the workspace), and
    # what its path is relative to in its trust item (None: the workspace).
    scope: Any = None
    root: Path | None = None
    isolation: str | None = None  # "worktree": it works in a git worktree of its own


BUILT_IN = (
    Definition(
        DEFAULT,
        "General-purpose agent for research and multi-step tasks, with every tool you have.",
    ),
    Definition(
        "explore",
        "Read-only agent for finding things out: searches and reads files, runs no command that changes anything.",
        prompt="You explore and report. You cannot change files: find what was asked, and say where (file:line) and why it matters.",
        read_only=True,
    ),
)


def extra_folders(kernel: Any) -> tuple[Folder, ...]:
    """The folders other plugins add (``agents_folders``: an installed Claude Code
    plugin's), read after the workspace's and the user's."""
    from ketch_prompt_kit.markdown_files import hooked_folders

    return hooked_folders(kernel, "agents_folders")


def load(
    workspace: Path, extra: tuple[Folder, ...] = ()
) -> tuple[dict[str, Definition], list[str]]:
    """Every definition by name (project first, then the user's, then those of other
    plugins' folders, then the built-ins) and the problems found (one line each)."""
    from ketch_prompt_kit.markdown_files import folders, read, unreadable

    found: dict[str, Definition] = {}
    problems: list[str] = []
    for folder in [*folders(workspace, "agents"), *extra]:
        paths = folder.paths("*.md")
        if not paths:
            continue
        if len(paths) > MAX_FILES:
            problems.append(
                f"{folder.path}: {len(paths)} agent files; only the first {MAX_FILES} are read"
            )
        for path in paths[:MAX_FILES]:
            file = read(path, folder)
            if file is None:
                problems.append(f"agent definition {unreadable(path)}")
                continue
            definition, problem = parse(
                file.meta,
                file.body,
                path,
                f"{folder.label}/{path.relative_to(folder.path)}",
                file.problem,
                description=file.text("description"),
            )
            if problem:
                problems.append(f"agent definition {path}: {problem}")
            if definition is None:
                continue
            definition = _in_folder(definition, folder)
            if definition.name in found:
                other = found[definition.name].path
                problems.append(
                    f"agent definition {path}: the agent {definition.name!r} is already {other}; this one is not used"
                )
                continue
            found[definition.name] = replace(
                definition, path=path, project=not folder.users_own, scope=folder.trust
            )
    for definition in BUILT_IN:
        found.setdefault(definition.name, definition)
    return found, problems


def parse(
    meta: dict[str, Any],
    body: str,
    path: Path,
    source: str,
    problem: str = "",
    *,
    description: str | None = None,
) -> tuple[Definition | None, str]:
    """The definition in one file (None when it cannot be one) and what was wrong (a
    front matter ``problem`` is said, and whatever could be read of it is used)."""
    notes: list[str] = [problem] if problem else []
    name = str(meta.get("name") or path.stem).strip()
    if not _NAME.fullmatch(name):
        return None, f"name {name!r} is not a plain name (letters, digits, - _ .); skipped"
    if description is None:
        description = str(meta.get("description") or "")
    description = " ".join(description.split())
    if not description:
        from ketch_prompt_kit.markdown_files import first_line

        description = first_line(body) or name
    tools = meta.get("tools")
    disallowed = meta.get("disallowedTools", meta.get("disallowed-tools"))
    model = meta.get("model")
    max_turns = meta.get("maxTurns", meta.get("max-turns"))
    if max_turns is not None and not (
        isinstance(max_turns, int) and not isinstance(max_turns, bool) and max_turns > 0
    ):
        notes.append(f"maxTurns {max_turns!r} is not a positive number; ignored")
        max_turns = None
    isolation = meta.get("isolation")
    if isolation is not None and str(isolation).strip() not in ("worktree", "none", ""):
        notes.append(f"isolation {isolation!r} is not 'worktree'; it works in the workspace")
        isolation = None
    for key, value in (("tools", tools), ("disallowedTools", disallowed)):
        lacking = [e for e in split_list(value) if _unmappable(e)]
        if lacking:
            reasons = "; ".join(why_unmapped(e.split("(", 1)[0].strip()) for e in lacking)
            notes.append(f"{key}: {reasons}; left out")
    definition = Definition(
        name=name,
        description=description[:500],
        prompt=body.strip(),
        tools=tuple(split_list(tools)) if tools is not None else None,
        disallowed=tuple(split_list(disallowed)),
        read_only=str(meta.get("permissionMode", "")).strip() == "plan",
        model=str(model).strip() if model not in (None, "") else None,
        max_turns=max_turns,
        source=source,
        path=path,
        isolation="worktree" if str(isolation or "").strip() == "worktree" else None,
    )
    return definition, "; ".join(notes)


def _in_folder(definition: Definition, folder: Folder) -> Definition:
    """A definition as its folder names it: an installed plugin's is ``plugin:NAME``,
    its ``${CLAUDE_PLUGIN_ROOT}`` expanded, its trust item relative to the plugin."""
    if not folder.namespace:
        return definition
    from ketch_claude_kit.claude_vars import expand

    prompt, _ = expand(definition.prompt, folder.variables())
    return replace(
        definition,
        name=folder.named(definition.name),
        prompt=prompt,
        root=Path(folder.trust.root) if folder.trust is not None else None,
    )


def _unmappable(entry: str) -> bool:
    """A Claude Code tool ketch has no tool for (``AskUserQuestion``)."""
    known = lookup(entry.split("(", 1)[0].strip())
    return known is not None and not known.tools


def ordered(definitions: dict[str, Definition]) -> dict[str, Definition]:
    """The built-ins first (the default first of all), then by name."""
    return dict(
        sorted(
            definitions.items(),
            key=lambda item: (item[1].source != "built-in", item[0] != DEFAULT, item[0]),
        )
    )


def listing(definitions: dict[str, Definition]) -> str:
    """The definitions for the tool's description: name, what it is for."""
    lines = []
    for definition in definitions.values():
        default = " (the default)" if definition.name == DEFAULT else ""
        lines.append(f"- {definition.name}{default}: {definition.description}")
    return "\n".join(lines)


def trust_item(definition: Definition, workspace: Path) -> TrustItem:
    """A project definition as a trust item: the whole file, by content (an installed
    plugin's relative to the plugin's folder)."""
    from ketch_trust_kit import make_item, relative_source

    assert definition.path is not None
    workspace = definition.root or workspace
    tools = ", ".join(definition.tools) if definition.tools is not None else "all of the parent's"
    return make_item(
        "agent",
        definition.name,
        relative_source(definition.path, workspace),
        {"name": definition.name},
        f"subagent {definition.name}: tools {tools}; {definition.description[:120]}",
        workspace=workspace,
        files=[definition.path],
    )


def project_items(workspace: Path) -> list[TrustItem]:
    definitions, _ = load(workspace)
    return [trust_item(d, workspace) for d in definitions.values() if d.project and d.path]


def folder_items(workspace: Path, folder: Folder) -> list[TrustItem]:
    """The definitions of one folder (an installed plugin's), as items."""
    definitions, _ = load(workspace, (folder,))
    return [
        trust_item(d, workspace)
        for d in definitions.values()
        if d.path is not None and d.scope is not None and d.scope == folder.trust
    ]
