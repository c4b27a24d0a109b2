"""An ACP prompt (content blocks) as the text of one ketch turn.

Text blocks are the message. An embedded ``resource`` (how editors send an
@-mentioned file or selection) is inlined in a ``<context>`` block, so the model sees
exactly what the person pointed at; a ``resource_link`` is named, and the model reads
it with its tools if it needs it. An ``image`` block becomes an image part of the
prompt (a model known not to take images gets the text and a notice, as everywhere);
audio is refused: this agent does not advertise it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlparse

from acp import RequestError

MAX_EMBEDDED = 200_000  # characters of one embedded resource the prompt carries


def _uri_label(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    return uri


def prompt_text(blocks: list[Any]) -> str:
    """The turn's prompt text (images aside: :func:`prompt_parts`)."""
    return prompt_parts(blocks)[0]


def _image(block: Any) -> Any:
    from pydantic import ValidationError

    from ketch.api import ImagePart

    try:
        return ImagePart(
            media_type=str(getattr(block, "mime_type", "") or ""),
            data=str(getattr(block, "data", "") or ""),
            name=_uri_label(getattr(block, "uri", None) or "") or "image",
        )
    except (ValidationError, ValueError) as exc:
        first = (
            exc.errors()[0].get("msg", str(exc)) if isinstance(exc, ValidationError) else str(exc)
        )
        raise RequestError(
            -32602, f"the image block cannot be used: {first}", {"block": "image"}
        ) from None


def prompt_parts(blocks: list[Any]) -> tuple[str, tuple[Any, ...]]:
    """The turn's prompt text and its images, or a JSON-RPC invalid-params error saying
    what is not accepted."""
    texts: list[str] = []
    context: list[str] = []
    images: list[Any] = []
    for block in blocks or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "resource_link":
            label = _uri_label(block.uri)
            title = f" ({block.title})" if getattr(block, "title", None) else ""
            texts.append(f"[{block.name}{title}: {label}]")
        elif kind == "resource":
            resource = block.resource
            uri = getattr(resource, "uri", "") or ""
            label = _uri_label(uri)
            text = getattr(resource, "text", None)
            if text is None:
                mime = getattr(resource, "mime_type", None) or "binary"
                context.append(
                    f'<context ref="{label}">[{mime} content, not shown: ketch takes text resources only]</context>'
                )
                continue
            if len(text) > MAX_EMBEDDED:
                text = (
                    text[:MAX_EMBEDDED]
                    + f"\n[… {len(text) - MAX_EMBEDDED} more characters not included; read the file for the rest]"
                )
            context.append(f'<context ref="{label}">\n{text}\n</context>')
        elif kind == "image":
            images.append(_image(block))
        elif kind == "audio":
            raise RequestError(
                -32602,
                "ketch does not accept audio content in prompts; send text, or reference the file",
                {"block": kind},
            )
        else:
            raise RequestError(-32602, f"unknown content block type {kind!r}", {"block": kind})
    prompt = "\n".join(t for t in texts if t)
    if context:
        prompt = (prompt + "\n\n" if prompt else "") + "\n".join(context)
    if not prompt.strip() and images:
        prompt = "(the image below)"
    if not prompt.strip():
        raise RequestError(-32602, "the prompt is empty: send at least one text block")
    return prompt, tuple(images)
