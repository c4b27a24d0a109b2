"""First run: is a local LM Studio server listening on localhost:1234?"""

from __future__ import annotations

import logging

from ketch.api import ProviderConfig

log = logging.getLogger("ketch.providers.openai")

LMSTUDIO_URL = "http://localhost:1234/v1"


async def detect_lmstudio(
    base_url: str = LMSTUDIO_URL, timeout: float = 1.0
) -> ProviderConfig | None:
    """A config named ``lmstudio`` (kind ``openai``) when ``GET /v1/models`` answers with
    a model list; the first chat model becomes the model. None when nothing answers."""
    from ketch_import_kit.httpx import httpx

    try:
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client:
            response = await client.get(f"{base_url}/models")
            data = response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError) as exc:
        log.debug("no LM Studio at %s: %s", base_url, type(exc).__name__)
        return None
    items = data.get("data") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    ids = [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]
    chat = [i for i in ids if "embed" not in i.lower()]  # LM Studio lists embedding models too
    return ProviderConfig(
        name="lmstudio", kind="openai", base_url=base_url, model=(chat or [None])[0]
    )
