"""The hook the skills plugin declares (``ketch_add_hookspecs``): folders of skills
from elsewhere than the workspace and the user's config."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookspec

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_prompt_kit.markdown_files import Folder


@hookspec
def skills_folders(kernel: Kernel) -> list[Folder] | None:
    """More folders of skills (``NAME/SKILL.md``): an installed Claude Code plugin's
    ``skills/``.

    Called whenever the skills are listed (the system prompt, the ``skill`` tool,
    ``/NAME``): answer quickly. Return ``ketch_prompt_kit.markdown_files.Folder``
    objects, read after the workspace's and the user's: each with its ``namespace``
    (its skills are ``namespace:NAME``), ``plugin_root`` and ``trust`` (the scope a
    skill with scripts is pinned in: it is offered only while pinned there),
    ``users_own=False``. None or [] when there are none. All results are collected.
    """
