"""ketch_provider_setup: which provider a session uses, and with what configuration
(docs/providers.md, "Configuration" and "First run"). Essential: the kernel builds no
provider without it.

It answers ``ketch_resolve_provider``: the provider named (``--provider``,
``default_provider``, the first ``[providers.NAME]`` table), else a kind whose usual key
variable is set, else a local server that answers, else a one-line error (the config
problems that left nothing configured, or the first-run help in the loaded provider
kinds' own words); then that table over the kind's defaults, the model chosen, and the
kind's own keys validated. The kernel holds whatever it answers to the managed policy's
``allowed_providers``/``allowed_models``.
"""

from __future__ import annotations

from typing import Any

from ketch.api import hookimpl


@hookimpl
def ketch_resolve_provider(kernel: Any, provider: str | None, model: str | None) -> Any:
    from ketch_provider_setup.resolve import resolve_provider

    return resolve_provider(kernel, provider, model)
