"""ketch's history and tools in Gemini's request shapes (the generateContent request body).

* ``contents``: ``user``/``model`` turns, consecutive same-role messages merged (function
  responses first), so the roles strictly alternate;
* a model turn replays its parts as they came: thought parts that carried a
  ``thoughtSignature``, text and function calls each with the signature they arrived
  with (never moved, merged or invented); a function call the API gave no ``id`` is
  replayed without one;
* function responses are matched back by name and id, in call order, ``{"output": ...}``
  or ``{"error": ...}``; images a tool returned go inside the response on Gemini 3
  (multimodal function responses) and as ``inlineData`` parts right after the
  responses on older models, which do not take them there;
* calls in history that carry no signature (another provider's, or compacted) get
  Google's documented validator-skip value on Gemini 3, which rejects unsigned calls.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ketch.api import (
    History,
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from ketch_provider_kit import GEMINI_IMAGES as GEMINI
from ketch_provider_kit import alternating, fit_image, image_base64
from ketch_provider_kit.wire import per_message

KIND = "gemini"
SKIP_SIGNATURE = "skip_thought_signature_validator"
_OLD_MODEL = re.compile(r"(^|/)gemini-(1|2)(\.|-|$)")


def validates_signatures(model: str) -> bool:
    """Gemini 3 and later reject an unsigned call in the current turn; 1.x and 2.x do not."""
    return "gemini" in model and not _OLD_MODEL.search(model)


def nests_images(model: str) -> bool:
    """Gemini 3 and later take images inside a ``functionResponse`` (``parts``)."""
    return validates_signatures(model)


def signature(data: dict[str, Any] | None) -> str | None:
    value = (data or {}).get("thoughtSignature")
    return value if isinstance(value, str) and value else None


def image_part(image: ImagePart) -> dict[str, Any]:
    fitted = fit_image(image, GEMINI)
    if isinstance(fitted, TextPart):
        return {"text": fitted.text}
    return {"inlineData": {"mimeType": fitted.media_type, "data": image_base64(fitted)}}


# --- history -> contents ------------------------------------------------------------------


def contents(messages: History, model: str) -> list[dict[str, Any]]:
    calls = {c.id: c for m in messages if m.role == "assistant" for c in m.tool_calls}

    def turn(message: Message) -> tuple[str, list[dict[str, Any]]]:
        if message.role == "assistant":
            return "model", _model_parts(message, model)
        if message.role == "user":
            return "user", _user_parts(message)
        return "user", _responses(message, calls, model)

    return alternating(
        (turn(m) for m in messages),
        field="parts",
        is_result=lambda part: "functionResponse" in part,
        opener={"text": "(continuing the conversation)"},
    )


@per_message
def _user_parts(message: Message) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            parts.append({"text": part.text})
        elif isinstance(part, ImagePart):
            parts.append(image_part(part))
    return parts


@per_message
def _model_parts(message: Message, model: str) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    first_call = True
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            if part.provider == KIND and part.signature:
                parts.append(
                    {"text": part.text, "thought": True, "thoughtSignature": part.signature}
                )
        elif isinstance(part, TextPart):
            sig = signature(part.provider_data)
            if part.text or sig:
                parts.append({"text": part.text, **({"thoughtSignature": sig} if sig else {})})
        elif isinstance(part, ToolCallPart):
            call: dict[str, Any] = {
                "name": part.name,
                "args": {} if part.input_error else part.input,
            }
            if (part.provider_data or {}).get("id", True):
                call["id"] = part.id
            item: dict[str, Any] = {"functionCall": call}
            sig = signature(part.provider_data)
            if first_call and not sig and validates_signatures(model):
                sig = SKIP_SIGNATURE  # a call Gemini never signed: documented escape hatch
            if sig:
                item["thoughtSignature"] = sig
            first_call = False
            parts.append(item)
    return parts


def _responses(
    message: Message, calls: dict[str, ToolCallPart], model: str
) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    trailing: list[dict[str, Any]] = []
    for result in message.parts:
        if not isinstance(result, ToolResultPart):
            continue
        call = calls.get(result.tool_call_id)
        response: dict[str, Any] = {
            "name": result.name,
            "response": {"output" if result.ok else "error": result.output},
        }
        if call is None or (call.provider_data or {}).get("id", True):
            response["id"] = result.tool_call_id
        images = [image_part(i) for i in result.images]
        if images and nests_images(model):
            response["parts"] = [p for p in images if "inlineData" in p]
            notes = [p["text"] for p in images if "text" in p]
            if notes:
                response["response"]["note"] = " ".join(notes)
        elif images:
            trailing += [{"text": f"(the image(s) returned by {result.name})"}, *images]
        parts.append({"functionResponse": response})
    return parts + trailing


# --- tool schemas ----------------------------------------------------------------------------

_DROP = ("$schema", "$id", "$comment", "$anchor")


class SchemaRefused(ValueError):
    """A schema Gemini cannot take even after conversion (say why)."""


def declaration(tool: ToolSpec) -> dict[str, Any]:
    """A ``functionDeclarations`` entry: JSON Schema in ``parametersJsonSchema``, with local
    ``$ref``s inlined (their ``$defs`` removed), ``const`` as a one-value ``enum`` and
    meta keys dropped. Raises :class:`SchemaRefused` for recursive or external refs."""
    schema = copy.deepcopy(tool.input_schema) if tool.input_schema else {}
    defs = {**schema.pop("definitions", {}), **schema.pop("$defs", {})}
    converted = _convert(schema, defs, ())
    if converted.get("type") != "object":
        if converted:
            raise SchemaRefused(f"the input schema of {tool.name} is not an object")
        converted = {"type": "object", "properties": {}}
    return {"name": tool.name, "description": tool.description, "parametersJsonSchema": converted}


def _convert(value: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    if isinstance(value, list):
        return [_convert(v, defs, seen) for v in value]
    if not isinstance(value, dict):
        return value
    ref = value.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        if not ref.startswith(("#/$defs/", "#/definitions/")) or name not in defs:
            raise SchemaRefused(f"the reference {ref!r} cannot be resolved")
        if name in seen:
            raise SchemaRefused(
                f"the type {name!r} refers to itself, which Gemini's schemas cannot express"
            )
        merged = {**defs[name], **{k: v for k, v in value.items() if k != "$ref"}}
        return _convert(merged, defs, (*seen, name))
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key in _DROP or key in ("$defs", "definitions"):
            continue
        if key == "const":
            out["enum"] = [item]
        elif key in ("properties", "patternProperties", "$defs"):
            out[key] = (
                {k: _convert(v, defs, seen) for k, v in item.items()}
                if isinstance(item, dict)
                else item
            )
        else:
            out[key] = _convert(item, defs, seen)
    return out
