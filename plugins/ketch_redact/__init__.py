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
line, or in a workspace config once that workspace is trusted: an untrusted
repository's ``.ketch/config.toml`` cannot switch off what protects its user.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

from ketch import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.kernel import Kernel
    from ketch.policy import ProposedCall
    from ketch.session import Session
    from ketch.tools import ToolResult

_REDACTORS: weakref.WeakKeyDictionary[Any, tuple[int, Any]] = weakref.WeakKeyDictionary()
_OFF: weakref.WeakSet[Any] = weakref.WeakSet()


def _switched_off(kernel: Kernel) -> tuple[bool, str | None]:
    """Whether redaction is off, and a notice when a workspace tried to turn it off."""
    value = (kernel.settings.tools or {}).get("redact_secrets", True)
    if value is not False:
        return False, None
    if kernel.trusted:
        return True, None
    others = [layer for layer in kernel.layers if layer.name != "workspace" and not layer.error]
    if any((layer.data.get("tools") or {}).get("redact_secrets") is False for layer in others):
        return True, None
    return (
        False,
        "[tools] redact_secrets = false in the workspace config is ignored until you trust this workspace; tool output stays redacted",
    )


@hookimpl
def ketch_configure(kernel: Kernel) -> None:
    off, notice = _switched_off(kernel)
    if off:
        _OFF.add(kernel)
    else:
        _OFF.discard(kernel)
    if notice:
        kernel.notices.append(notice)


def redactor_for(kernel: Kernel) -> Any:
    """One redactor per kernel, rebuilt when it learns another key."""
    from ketch_redact.redactor import Redactor

    known = kernel.known_secrets() if hasattr(kernel, "known_secrets") else ()
    cached = _REDACTORS.get(kernel)
    if cached is not None and cached[0] == len(known):
        return cached[1]
    import os

    environ = {**kernel.environ, **os.environ}
    redactor = Redactor.of(environ, ((secret.reveal(), "provider-key") for secret in known))
    _REDACTORS[kernel] = (len(known), redactor)
    return redactor


@hookimpl
def ketch_tool_result(
    session: Session, call: ProposedCall, result: ToolResult
) -> ToolResult | None:
    kernel = session.kernel
    if kernel in _OFF:
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
