"""Reading what a prompt mentions, as the user's own tool calls."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import TextPart
from ketch_prompt_kit.mentions import find_mentions

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import PromptIntake, Session

MAX_MENTIONS = 20  # a prompt naming more is probably a pasted log, not a request


def _resolve(workspace: Path, text: str) -> Path:
    expanded = os.path.expanduser(text) if text.startswith("~") else text
    return Path(os.path.realpath(os.path.join(workspace, expanded)))


async def attach_mentions(session: Session, prompt: str, intake: PromptIntake) -> list[Any]:
    workspace = session.workspace
    mentions = find_mentions(prompt, lambda path: os.path.lexists(_resolve(workspace, path)))
    parts: list[Any] = []
    seen: set[Path] = set()
    for mention in mentions[:MAX_MENTIONS]:
        target = _resolve(workspace, mention.path)
        if target in seen:
            continue
        seen.add(target)
        tool = "list_dir" if target.is_dir() else "read_file"
        if not intake.has_tool(tool):
            parts.append(
                _not_attached(
                    intake,
                    mention.path,
                    f"the {tool} tool is not loaded (is the fs plugin disabled?)",
                )
            )
            continue
        result = await intake.call_tool(tool, {"path": mention.path})
        if not result.ok:
            parts.append(_not_attached(intake, mention.path, _reason(result.output)))
            continue
        if (
            result.images
        ):  # a picture: read_file gives the image itself (a model without vision gets a note)
            parts.append(
                TextPart(
                    text=f'<attachment mention="@{mention.path}" content="an image">{result.output}</attachment>'
                )
            )
            parts.extend(result.images)
            continue
        kind = (
            "a listing of the directory"
            if tool == "list_dir"
            else "the file, as read_file shows it (numbered lines)"
        )
        parts.append(
            TextPart(
                text=f'<attachment mention="@{mention.path}" content="{kind}">\n{result.output}\n</attachment>'
            )
        )
    if len(mentions) > MAX_MENTIONS:
        intake.notice(f"only the first {MAX_MENTIONS} @ mentions were attached")
    return parts


def _reason(output: str) -> str:
    text = output.removeprefix("[ketch] ").strip()
    if "no one can approve it" in text:
        return "reading it needs your approval, and no one can approve it here (in the shell you are asked; with -p, allow it with a rule)"
    if text.startswith("The user declined"):
        return "you declined reading it"
    return text.splitlines()[0] if text else "it could not be read"


def _not_attached(intake: PromptIntake, path: str, reason: str) -> TextPart:
    intake.notice(f"@{path} was not attached: {reason}")
    return TextPart(text=f"[The user mentioned @{path}, but it was not attached: {reason}.]")
