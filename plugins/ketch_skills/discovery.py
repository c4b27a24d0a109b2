"""Finding skills, and ``/NAME`` for each. Import-light (no pydantic): commands are
registered before the command line is parsed, ``ketch --help`` included."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from ketch.api import Command, PromptRequest, SlashContext
from ketch_prompt_kit.markdown_files import (
    Folder,
    MarkdownFile,
    first_line,
    folders,
    hooked_folders,
    read,
    unreadable,
)

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem

MAX_SKILLS = 200
MAX_DESCRIPTION = 1024  # the Agent Skills spec's limit
MAX_FILES_LISTED = 50


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    markdown: MarkdownFile

    @property
    def directory(self) -> Path:
        return self.markdown.path.parent

    @property
    def user_invocable(self) -> bool:
        return self.markdown.meta.get("user-invocable", True) is not False

    @property
    def model_invocable(self) -> bool:
        return self.markdown.meta.get("disable-model-invocation", False) is not True


def extra_folders(kernel: Kernel) -> tuple[Folder, ...]:
    """The folders other plugins add (``skills_folders``: an installed Claude Code
    plugin's), read after the workspace's and the user's."""
    return hooked_folders(kernel, "skills_folders")


@lru_cache(maxsize=8)
def _discover(
    workspace: Path, extra: tuple[Folder, ...] = ()
) -> tuple[tuple[Skill, ...], tuple[str, ...]]:
    """The skills, and one line naming each file that is not one (and why)."""
    found: dict[str, Skill] = {}
    problems: list[str] = []
    for folder in [*folders(workspace, "skills"), *extra]:
        paths = folder.paths("*/SKILL.md", recursive=False)
        if not paths:
            continue
        if len(paths) > MAX_SKILLS:
            problems.append(
                f"{folder.path}: {len(paths)} skills; only the first {MAX_SKILLS} are read"
            )
        for path in paths[:MAX_SKILLS]:
            name = folder.named(path.parent.name.lower())
            if " " in name or path.parent.name.startswith("."):
                problems.append(
                    f"{path}: a skill's folder name cannot hold blanks or start with a dot; not a skill"
                )
                continue
            if name in found:
                problems.append(
                    f"{path}: the skill {name} is already {found[name].markdown.path}; this one is not used"
                )
                continue
            markdown = read(path, folder)
            if markdown is None:
                problems.append(unreadable(path))
                continue
            if markdown.problem:
                problems.append(markdown.report())
            description = (markdown.text("description") or first_line(markdown.body))[
                :MAX_DESCRIPTION
            ]
            found[name] = Skill(name, description, markdown)
    return tuple(found.values()), tuple(problems)


def skills(workspace: Path, extra: tuple[Folder, ...] = ()) -> tuple[Skill, ...]:
    return _discover(Path(workspace), extra)[0]


def problems(workspace: Path, extra: tuple[Folder, ...] = ()) -> tuple[str, ...]:
    """What was wrong with the skill files (one line each, naming the file)."""
    return _discover(Path(workspace), extra)[1]


# --- trust: a project skill that carries scripts ----------------------------------------

SCRIPT_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".rb", ".pl", ".php", ".ps1")
MAX_SCRIPTS = 64


def scripts_of(skill: Skill) -> list[Path]:
    """The files beside a skill's SKILL.md that are programs (executable, a script's
    suffix, or a ``#!`` line): what its instructions have the model run."""
    import os

    found: list[Path] = []
    for path in sorted(skill.directory.rglob("*")):
        if len(found) >= MAX_SCRIPTS or not path.is_file() or path.name == "SKILL.md":
            continue
        try:
            with open(path, "rb") as handle:
                shebang = handle.read(2) == b"#!"
        except OSError:
            shebang = False
        if shebang or path.suffix in SCRIPT_SUFFIXES or os.access(path, os.X_OK):
            found.append(path)
    return found


def trust_item(skill: Skill, workspace: Path) -> TrustItem | None:
    """A project skill with scripts as a trust item (its SKILL.md and every script, by
    content); None for the person's own skills and for skills that are only text. An
    installed Claude Code plugin's skill is relative to the plugin's folder."""
    if skill.markdown.folder.users_own:
        return None
    scripts = scripts_of(skill)
    if not scripts:
        return None
    from ketch_trust_kit import make_item, relative_source

    workspace = skill.markdown.folder.root(workspace)
    where = relative_source(skill.directory, workspace)
    listed = ", ".join(relative_source(p, skill.directory) for p in scripts)
    return make_item(
        "skill",
        skill.name,
        where,
        {"skill": skill.name},
        f"skill {skill.name} with scripts the model is told to run: {listed}",
        workspace=workspace,
        files=[skill.markdown.path, *scripts],
    )


def held_back(kernel: Kernel) -> frozenset[str]:
    """Names of the project (and installed plugins') skills with scripts the person has
    not trusted (each said once)."""
    from ketch_trust_kit import check

    held = set()
    for skill in skills(kernel.workspace, extra_folders(kernel)):
        item = trust_item(skill, kernel.workspace)
        scope = skill.markdown.folder.trust
        if item is not None and not check(kernel, item, held="not offered", scope=scope):
            held.add(skill.name)
    return frozenset(held)


def trust_items(kernel: Kernel) -> list[TrustItem]:
    items = (trust_item(s, kernel.workspace) for s in skills(kernel.workspace))
    return [item for item in items if item is not None]


def folder_items(kernel: Kernel, folder: Folder) -> list[TrustItem]:
    """The skills with scripts of one folder (an installed plugin's), as items."""
    found = _discover(Path(kernel.workspace), (folder,))[0]
    items = (trust_item(s, kernel.workspace) for s in found if s.markdown.folder == folder)
    return [item for item in items if item is not None]


def find(workspace: Path, name: str, extra: tuple[Folder, ...] = ()) -> Skill | None:
    wanted = name.strip().lstrip("/").lower()
    return next((s for s in skills(workspace, extra) if s.name == wanted), None)


# --- /NAME --------------------------------------------------------------------------------


def skill_commands(kernel: Kernel) -> list[Command]:
    extra = extra_folders(kernel)
    kernel.notices.extend(problems(kernel.workspace, extra))
    commands = []
    held = held_back(kernel)
    for skill in skills(kernel.workspace, extra):
        if not skill.user_invocable or skill.name in held:
            continue

        def run(ctx: SlashContext, skill: Skill = skill) -> None:
            run_skill(ctx, skill)

        commands.append(
            Command(
                name=skill.name,
                help=skill.description or "a skill",
                slash=True,
                slash_run=run,
                extra={
                    "source": f"skill, {skill.markdown.folder.label}",
                    "argument_hint": skill.markdown.text("argument-hint"),
                    "prompt": True,
                },
            )
        )
    return commands


def run_skill(ctx: SlashContext, skill: Skill) -> None:
    from ketch_prompt_kit.allowed_tools import narrow_rest_of_turn, narrowing, unknown_note
    from ketch_skills.skills import body_for

    if ctx.submit is None:
        ctx.print(f"/{skill.name}: this frontend cannot send a skill's prompt")
        return
    allowed = skill.markdown.meta.get("allowed-tools")
    narrow, unknown = narrowing(allowed, ctx.kernel.tools, f"the skill {skill.name}")
    if unknown:
        ctx.print(unknown_note(f"/{skill.name}", unknown, ctx.kernel.tools))
    if narrow is not None and narrow.scoped:
        narrow_rest_of_turn(ctx.session, "skills", f"the skill {skill.name}", allowed)
    text = (
        f"Use the skill {skill.name} for this request."
        + (f"\n\n{ctx.argument}" if ctx.argument.strip() else "")
        + "\n\n"
        + body_for(skill, ctx.argument, ctx.session.id, ctx.session.workspace)
    )
    ctx.submit(
        PromptRequest(
            text=text,
            model=skill.markdown.text("model") or None,
            allowed_tools=narrow.tools if narrow else None,
            source=f"/{skill.name}",
        )
    )
