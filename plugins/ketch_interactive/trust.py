"""The workspace trust prompt.

Until the user trusts a workspace, the keys of its ``.ketch/config.toml`` that could
raise authority (allow rules, profile, hooks, MCP servers, base URLs) are ignored by
the settings loader. The shell says which were ignored and offers to trust the
workspace; trusting is the policy plugin's job (its ``/trust`` command), so without
one the shell only says how to apply them for a run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prompt_toolkit.formatted_text import FormattedText

if TYPE_CHECKING:  # pragma: no cover
    from ketch.config import Layer
    from ketch.kernel import Kernel
    from ketch_interactive.shell import Shell


def ignored_workspace_layer(kernel: Kernel) -> Layer | None:
    """The workspace layer when some of its keys were ignored (the workspace is untrusted)."""
    layer = next((item for item in kernel.loaded_settings.layers if item.name == "workspace"), None)
    if layer is None or not layer.ignored or kernel.trusted:
        return None
    return layer


def notice_prefix(layer: Layer) -> str:
    """How the settings loader's notice about this layer starts (the prompt replaces it)."""
    return f"{layer.source}: ignored "


async def offer_trust(shell: Shell, layer: Layer) -> None:
    from ketch_interactive.approval import Interrupted, confirm
    from ketch_interactive.slash import plugin_command, run_plugin_command

    if shell.session.trusted_workspace:
        return
    keys = ", ".join(sorted(layer.ignored))
    message = FormattedText(
        [
            ("class:title", "This workspace's config wants settings that need your trust:\n"),
            ("class:summary", f"  {layer.source}\n"),
            ("class:reason", f"  ignored until trusted: {keys}\n"),
            (
                "",
                "  A repository's own files cannot raise ketch's authority unless you trust it.\n",
            ),
            ("class:title", "Trust this workspace?"),
        ]
    )
    try:
        trust = await confirm(
            message, "Trust it and apply those settings", "Not now (keep ignoring them)"
        )
    except (Interrupted, EOFError):
        trust = False
    if not trust:
        shell.renderer.line(
            f"· not trusted: ignoring {keys} (trust later with /trust, or run ketch --trust-workspace)",
            "dim",
        )
        return
    command = plugin_command(shell, "trust")
    if command is None:
        shell.renderer.line(
            "! no /trust command is loaded (is the policy plugin disabled?); "
            "run `ketch --trust-workspace` to apply this workspace's settings for one run",
            "yellow",
        )
        return
    await run_plugin_command(shell, command, "")
