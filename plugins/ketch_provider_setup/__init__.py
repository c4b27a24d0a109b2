"""ketch_provider_setup: which provider a run uses when nothing names one, and what to
do when none can be found (docs/providers.md, "First run").

The kernel resolves a named provider itself (``--provider``, ``default_provider``, the
first ``[providers.NAME]`` table) and asks ``ketch_default_provider`` only when nothing
names one. This plugin answers with a kind whose usual key variable is set, else a local
server that answers, else a one-line error: the config problems that left nothing
configured, or the first-run help in the loaded provider kinds' own words. Disabled,
a run with nothing configured stops with the kernel's short ``NoProviderConfigured``.
"""

from __future__ import annotations

from typing import Any

from ketch.api import hookimpl


@hookimpl
def ketch_default_provider(kernel: Any) -> str | None:
    from ketch_provider_setup.choose import default_provider

    return default_provider(kernel)
