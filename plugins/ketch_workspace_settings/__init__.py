"""ketch_workspace_settings: what a repository's own ``.ketch/config.toml`` may set
before it is trusted (docs/trust.md). Essential: the kernel applies none of that file
without it.

It answers ``ketch_workspace_config``: the keys that cannot raise authority (the
kernel's safe keys, :data:`ketch_workspace_settings.split.WORKSPACE_SAFE_KEYS`, and each
settings section's ``workspace_safe``) apply as written; every other value is held back
and applies only as far as ``ketch_workspace_setting`` (the trust plugin) admits it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, SettingsSection


@hookimpl
def ketch_workspace_config(
    kernel: Kernel, data: dict[str, Any], sections: list[SettingsSection], admit: bool
) -> Any:
    from ketch_workspace_settings.split import split_workspace

    return split_workspace(kernel, data, sections, admit)
