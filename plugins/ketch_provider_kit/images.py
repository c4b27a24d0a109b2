"""Images within a provider's limits: downscaled (Pillow, imported only then) when too big.

Each API caps what one image may be (bytes and pixels); an image over the cap is a 400
for the whole request. :func:`fit_image` returns the image unchanged when it fits, else
a smaller rendition (longest side shrunk, re-encoded as PNG when it has transparency,
JPEG otherwise), stepping down until it fits. An image that cannot be made to fit (or
decoded) is replaced by a note, so one bad picture never sinks the conversation.
"""

from __future__ import annotations

import base64
import io
import logging
from dataclasses import dataclass
from typing import Any

from ketch.api import History, ImagePart, Message, TextPart, ToolResultPart

log = logging.getLogger("ketch.providers.images")


@dataclass(frozen=True)
class ImageLimits:
    """What one provider accepts for one image."""

    max_bytes: int
    max_side: int  # the longest side in pixels


# Raw bytes (base64 adds a third on the wire). Anthropic: 5 MB per image (of base64), and
# it resizes anything over 1568 px itself, so larger only costs upload time; OpenAI: 20 MB,
# and it works at 2048 px at most; Gemini: 20 MB for the whole inline request; Ollama: the
# model's own preprocessor resizes, so only the size matters.
ANTHROPIC = ImageLimits(max_bytes=3_750_000, max_side=1568)
OPENAI = ImageLimits(max_bytes=15_000_000, max_side=2048)
GEMINI = ImageLimits(max_bytes=7_000_000, max_side=3072)
OLLAMA = ImageLimits(max_bytes=10_000_000, max_side=2048)


def image_base64(image: ImagePart) -> str:
    """The image's bytes in base64, as the wire formats carry them."""
    return base64.b64encode(image.data).decode("ascii")


def image_data_uri(image: ImagePart) -> str:
    """The image as a ``data:`` URI (OpenAI's image parts)."""
    return f"data:{image.media_type};base64,{image_base64(image)}"


def image_label(image: ImagePart) -> str:
    """How the image is named in text: ``shot.png (image/png, 52 KB)``."""
    size = (
        f"{len(image.data) / 1024:,.0f} KB"
        if len(image.data) >= 1024
        else f"{len(image.data)} bytes"
    )
    return f"{image.name or 'image'} ({image.media_type}, {size})"


def _dimensions(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG/GIF header without decoding (the common case), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    if data.startswith((b"GIF87a", b"GIF89a")) and len(data) >= 10:
        return int.from_bytes(data[6:8], "little"), int.from_bytes(data[8:10], "little")
    return None


def fit_image(image: ImagePart, limits: ImageLimits) -> ImagePart | TextPart:
    """``image`` if it is within ``limits``, else a downscaled copy, else a note."""
    size = _dimensions(image.data)
    if len(image.data) <= limits.max_bytes and size is not None and max(size) <= limits.max_side:
        return image
    try:
        from PIL import Image  # HPND licence; only needed when an image must be resized

        with Image.open(io.BytesIO(image.data)) as opened:  # reads the header only
            if len(image.data) <= limits.max_bytes and max(opened.size) <= limits.max_side:
                return image
            opened.draft("RGB", (limits.max_side, limits.max_side))  # JPEG: decode smaller
            opened.load()
            picture = opened.copy()
    except Exception as exc:  # noqa: BLE001 - any decoding failure: say so, send the rest
        log.info("could not decode %s: %s", image.name or "an image", exc)
        return TextPart(
            text=f"[image {image_label(image)} could not be read or resized, so it is not shown]"
        )
    alpha = picture.mode in ("RGBA", "LA", "PA") or (
        picture.mode == "P" and "transparency" in picture.info
    )
    side = min(limits.max_side, max(picture.size))
    for _ in range(8):
        scaled = picture.copy()
        scaled.thumbnail((side, side))
        out = io.BytesIO()
        if alpha:
            scaled.save(out, format="PNG", optimize=True)
            media = "image/png"
        else:
            scaled.convert("RGB").save(out, format="JPEG", quality=85)
            media = "image/jpeg"
        if out.tell() <= limits.max_bytes:
            return ImagePart(media_type=media, data=out.getvalue(), name=image.name)
        side = int(side * 0.7)
    return TextPart(text=f"[image {image_label(image)} is too large to send even after resizing]")


def without_images(history: History) -> tuple[History, int]:
    """The history with every image replaced by a note naming it (for a model that
    takes no images), and how many were replaced. Messages without images are kept as
    they are (the same objects)."""
    dropped = 0
    out: list[Message] = []
    for message in history:
        parts: list[Any] = []
        changed = False
        for part in message.parts:
            if isinstance(part, ImagePart):
                parts.append(
                    TextPart(
                        text=f"[image {image_label(part)} not shown: this model takes no images]"
                    )
                )
                dropped += 1
                changed = True
            elif isinstance(part, ToolResultPart) and part.images:
                names = ", ".join(image_label(i) for i in part.images)
                note = f"\n[image(s) {names} not shown: this model takes no images]"
                parts.append(part.model_copy(update={"images": (), "output": part.output + note}))
                dropped += len(part.images)
                changed = True
            else:
                parts.append(part)
        out.append(message.model_copy(update={"parts": tuple(parts)}) if changed else message)
    return tuple(out), dropped
