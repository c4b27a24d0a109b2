"""ketch_attach: ``@path`` in a prompt attaches that file (``@dir/``: a listing).

The kernel's ``ketch_expand_prompt`` hook hands this plugin each prompt the user
submits (in the shell and with ``ketch -p``). Every mention of an existing path is read
by running the ``read_file`` (or ``list_dir``) tool on the user's behalf, through the
same path as the model's calls: the read rules apply (a secret or a path outside the
workspace asks; with nobody to ask, as in ``-p`` without a terminal, it is not read and
the user is told), the read is journaled, and what was shown counts as read for the
write guard. See docs/attachments.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import PromptIntake, Session


@hookimpl(optionalhook=True)
def verbatim_prompts(session: Session) -> str:
    """A prompt without an ``@`` mentions nothing to attach."""
    return "[^@]*"


@hookimpl
async def ketch_expand_prompt(
    session: Session, prompt: str, intake: PromptIntake
) -> list[Any] | None:
    if "@" not in prompt:
        return None
    from ketch_attach.attach import attach_mentions

    return await attach_mentions(session, prompt, intake)
