"""The provider author's kit: shared helpers for HTTP provider plugins (bundled or third-party).

This package is a library, not a plugin: it registers nothing. Provider plugins import it
(a blocked provider plugin must never be imported, so shared code cannot live in one).

Every provider must classify failures the same way for the loop's single retry policy
to work, so the rules live here once: error bodies of every shape (``{"error": {...}}``,
``{"error": "..."}``, vLLM's top-level form, HTML from a proxy), status and error-type
to :class:`~ketch.providers.ErrorKind`, ``retry-after-ms`` / ``retry-after``,
the context-overflow classifier with its limit numbers, and transport failures. Also:
reading SSE events as UTF-8 whatever the headers claim, images fitted to each API's
limits (downscaled with Pillow only when needed), a ``<think>`` tag splitter for
servers that leak reasoning into the text, a small table of known context windows,
and an httpx client that follows the running event loop.

Nothing here sends a request on its own or knows a concrete provider's wire format.
"""

from __future__ import annotations

from ketch_provider_kit.base import HttpProvider
from ketch_provider_kit.errors import (
    ErrorDetail,
    HttpError,
    classify,
    context_numbers,
    error_detail,
    is_context_overflow,
    malformed,
    retry_after,
    transport_error,
)
from ketch_provider_kit.images import ANTHROPIC as ANTHROPIC_IMAGES
from ketch_provider_kit.images import GEMINI as GEMINI_IMAGES
from ketch_provider_kit.images import OLLAMA as OLLAMA_IMAGES
from ketch_provider_kit.images import OPENAI as OPENAI_IMAGES
from ketch_provider_kit.images import (
    ImageLimits,
    fit_image,
    image_base64,
    image_data_uri,
    image_label,
    without_images,
)
from ketch_provider_kit.models import KNOWN_CONTEXT_WINDOWS, known_context_window
from ketch_provider_kit.parsing import (
    ContentReader,
    ThinkTagSplitter,
    parse_arguments,
    split_late_close_tag,
)
from ketch_provider_kit.streams import (
    DONE,
    LoopClient,
    ndjson_lines,
    open_stream,
    read_error_body,
    request_json,
    sse_events,
    sse_json,
)
from ketch_provider_kit.text import as_dict, as_int, as_list, config_extra, one_line, origin, redact
from ketch_provider_kit.turns import alternating

__all__ = [
    "alternating",
    "ANTHROPIC_IMAGES",
    "GEMINI_IMAGES",
    "OLLAMA_IMAGES",
    "OPENAI_IMAGES",
    "ImageLimits",
    "fit_image",
    "image_base64",
    "image_data_uri",
    "image_label",
    "without_images",
    "HttpProvider",
    "KNOWN_CONTEXT_WINDOWS",
    "ContentReader",
    "DONE",
    "ErrorDetail",
    "HttpError",
    "LoopClient",
    "ThinkTagSplitter",
    "as_dict",
    "as_int",
    "as_list",
    "classify",
    "config_extra",
    "context_numbers",
    "error_detail",
    "is_context_overflow",
    "known_context_window",
    "malformed",
    "ndjson_lines",
    "one_line",
    "open_stream",
    "origin",
    "parse_arguments",
    "read_error_body",
    "redact",
    "request_json",
    "retry_after",
    "split_late_close_tag",
    "sse_events",
    "sse_json",
    "transport_error",
]
