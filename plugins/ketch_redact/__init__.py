"""Secrets never reach the model by accident: tool results are redacted before anyone sees them.

Implements ``ketch_tool_result``, the last word on a call's result before the model,
the journal and the screen get it. Redacted, in the output and in the diff: the
values of the process's own secret-looking environment variables, the API keys the
kernel resolved (``Kernel.known_secrets()``: environment or keyring), and secrets found
by content with the rules that classify files (:mod:`ketch_secret_kit`: credential
formats, the password or token in a URL's userinfo, secret-looking values in
assignment context). Each becomes ``[REDACTED NAME]``, and the result says how many:
``[ketch] 2 secrets redacted``.

``[tools] redact_secrets = false`` turns it off -- in the user config, on the command
line, or in a workspace config once the person trusted that very setting (an item
``ketch trust`` shows): a repository's ``.ketch/config.toml`` cannot switch off what
protects its user.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ketch.api import StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel, ProposedCall, Session, ToolResult

# In kernel.stash: each kernel has its own switch and its own redactor (the keys it
# resolved), so a kernel with redaction off leaves every other kernel's on.
REDACTOR = StashKey[tuple[int, Any]]()  # (how many keys it knew, the redactor)
OFF = StashKey[bool]()


def _switch_item(kernel: Any) -> Any:
    """The workspace's ``redact_secrets = false`` as a trust item (None when it has none)."""
    from ketch_trust_kit import make_item, workspace_config

    tools = workspace_config(kernel).get("tools")
    if not isinstance(tools, dict) or tools.get("redact_secrets") is not False:
        return None
    return make_item(
        "setting",
        "tools.redact_secrets",
        ".ketch/config.toml",
        {"tools.redact_secrets": False},
        "tools.redact_secrets = false (tool output is no longer redacted)",
        workspace=kernel.workspace,
    )


@hookimpl(optionalhook=True)
def trust_items(kernel: Kernel) -> list[Any]:
    item = _switch_item(kernel)
    return [item] if item is not None else []


def _switched_off(kernel: Kernel) -> bool:
    """Whether redaction is off (a workspace's own switch only once trusted)."""
    value = (kernel.settings.tools or {}).get("redact_secrets", True)
    if value is not False:
        return False
    others = [layer for layer in kernel.layers if layer.name != "workspace" and not layer.error]
    if any((layer.data.get("tools") or {}).get("redact_secrets") is False for layer in others):
        return True
    item = _switch_item(kernel)
    if item is None:
        return False
    from ketch_trust_kit import check

    return check(kernel, item, held="ignored: tool output stays redacted")


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    kernel.stash[OFF] = _switched_off(kernel)


def redactor_for(kernel: Kernel) -> Any:
    """One redactor per kernel, rebuilt when it learns another key."""
    from ketch_redact.redactor import Redactor

    known = kernel.known_secrets() if hasattr(kernel, "known_secrets") else ()
    cached = kernel.stash.get(REDACTOR)
    if cached is not None and cached[0] == len(known):
        return cached[1]
    import os

    environ = {**kernel.environ, **os.environ}
    redactor = Redactor.of(environ, ((secret.reveal(), "provider-key") for secret in known))
    kernel.stash[REDACTOR] = (len(known), redactor)
    return redactor


@hookimpl
def ketch_tool_result(
    session: Session, call: ProposedCall, result: ToolResult
) -> ToolResult | None:
    kernel = session.kernel
    if kernel.stash.get(OFF, False):
        return None
    redactor = redactor_for(kernel)
    output = redactor.redact(result.output)
    diff = redactor.redact(result.diff) if result.diff else None
    count = output.count + (diff.count if diff else 0)
    if not count:
        return None
    note = f"[ketch] {count} secret{'s' if count != 1 else ''} redacted"
    text = output.text + ("\n" if output.text and not output.text.endswith("\n") else "") + note
    return result.model_copy(update={"output": text, "diff": diff.text if diff else result.diff})
