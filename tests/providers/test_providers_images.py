"""Images in each provider's own form, through the real loopback server: a user message
carrying an image, and an image a tool returned (inside the result where the API allows
it, right after the results where it does not); images over a provider's limit are
downscaled; a model without vision (Ollama's capabilities) gets the text and a notice."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from ketch.messages import ImagePart, Message, TextPart, ToolCallPart, ToolResultPart
from ketch.providers import Notice

from .kit import PATHS, make, request, run
from .loopback import LoopbackServer, Reply
from .recordings import KINDS, OLLAMA_SHOW, recordings


def png(width: int = 4, height: int = 3, colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(out, format="PNG")
    return out.getvalue()


SHOT = ImagePart(media_type="image/png", data=png(), name="shot.png")
B64 = base64.b64encode(SHOT.data).decode()
URI = f"data:image/png;base64,{B64}"


def serve_plain(server: LoopbackServer, kind: str, show: dict[str, Any] | None = None) -> None:
    rec = recordings(kind)
    server.queue(
        PATHS[kind], Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    )
    server.default(
        "/api/show",
        Reply.json(200, show or {**OLLAMA_SHOW, "capabilities": ["completion", "tools", "vision"]}),
        method="POST",
    )


def sent(
    server: LoopbackServer, kind: str, messages: tuple[Message, ...], **config: Any
) -> tuple[dict[str, Any], list[Any]]:
    serve_plain(server, kind, config.pop("show", None))
    events, error = run(
        make(kind, server.url, **config), request(kind, messages=messages, tools=(), system="")
    )
    assert error is None, error
    return server.posts(PATHS[kind])[-1], events


ASKED = {
    "openai": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in this picture?"},
                {"type": "image_url", "image_url": {"url": URI}},
            ],
        }
    ],
    "openai-responses": [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "what is in this picture?"},
                {"type": "input_image", "image_url": URI, "detail": "auto"},
            ],
        }
    ],
    "anthropic": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is in this picture?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": B64},
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        }
    ],
    "ollama": [{"role": "user", "content": "what is in this picture?", "images": [B64]}],
    "gemini": [
        {
            "role": "user",
            "parts": [
                {"text": "what is in this picture?"},
                {"inlineData": {"mimeType": "image/png", "data": B64}},
            ],
        }
    ],
}
FIELD = {
    "openai": "messages",
    "openai-responses": "input",
    "anthropic": "messages",
    "ollama": "messages",
    "gemini": "contents",
}


@pytest.mark.parametrize("kind", KINDS)
def test_a_user_image_is_sent_in_each_providers_form(server: LoopbackServer, kind: str) -> None:
    asked = Message(role="user", parts=(TextPart(text="what is in this picture?"), SHOT))
    body, _ = sent(server, kind, (asked,))
    assert body[FIELD[kind]] == ASKED[kind]


CALL = ToolCallPart(id="call_1", name="read_file", input={"path": "shot.png"})
RESULT = ToolResultPart(
    tool_call_id="call_1", name="read_file", ok=True, output="[image shot.png]", images=(SHOT,)
)
TOOL_TURN = {
    "openai": [
        {"role": "tool", "tool_call_id": "call_1", "content": "[image shot.png]"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "(the image(s) returned by read_file, call call_1)"},
                {"type": "image_url", "image_url": {"url": URI}},
            ],
        },
    ],
    "openai-responses": [
        {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [
                {"type": "input_text", "text": "[image shot.png]"},
                {"type": "input_image", "image_url": URI, "detail": "auto"},
            ],
        },
    ],
    "anthropic": [
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "content": [
                        {"type": "text", "text": "[image shot.png]"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": B64},
                        },
                    ],
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        },
    ],
    "ollama": [
        {
            "role": "tool",
            "content": "[image shot.png]",
            "tool_name": "read_file",
            "tool_call_id": "call_1",
        },
        {"role": "user", "content": "(the image(s) returned by read_file)", "images": [B64]},
    ],
    "gemini": [  # Gemini 2.x: the image goes right after the responses, in the same user turn
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "read_file",
                        "response": {"output": "[image shot.png]"},
                        "id": "call_1",
                    }
                },
                {"text": "(the image(s) returned by read_file)"},
                {"inlineData": {"mimeType": "image/png", "data": B64}},
            ],
        },
    ],
}


@pytest.mark.parametrize("kind", KINDS)
def test_an_image_a_tool_returned_reaches_the_model(server: LoopbackServer, kind: str) -> None:
    history = (
        Message.user("look at shot.png"),
        Message(role="assistant", parts=(CALL,)),
        Message(role="tool", parts=(RESULT,)),
    )
    body, _ = sent(server, kind, history)
    turn = body[FIELD[kind]][-len(TOOL_TURN[kind]) :]
    assert turn == TOOL_TURN[kind]


def test_gemini_3_nests_a_tool_image_inside_the_function_response(server: LoopbackServer) -> None:
    model = "gemini-3-pro-preview"
    history = (
        Message.user("look"),
        Message(role="assistant", parts=(CALL,)),
        Message(role="tool", parts=(RESULT,)),
    )
    server.queue(
        f"/v1beta/models/{model}:streamGenerateContent",
        Reply(chunks=[recordings("gemini")["streams"]["plain"]]),
    )
    _, error = run(
        make("gemini", server.url, model=model),
        request("gemini", model=model, messages=history, tools=(), system=""),
    )
    assert error is None
    last = server.posts(f"/v1beta/models/{model}:streamGenerateContent")[0]["contents"][-1]
    assert last == {
        "role": "user",
        "parts": [
            {
                "functionResponse": {
                    "name": "read_file",
                    "response": {"output": "[image shot.png]"},
                    "id": "call_1",
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": B64}}],
                }
            }
        ],
    }


def test_an_image_over_the_providers_limit_is_downscaled(server: LoopbackServer) -> None:
    # Anthropic works at 1568 px on the long side: a wider picture is shrunk before upload
    wide = ImagePart(media_type="image/png", data=png(3000, 600), name="wide.png")
    body, _ = sent(server, "anthropic", (Message(role="user", parts=(TextPart(text="see"), wide)),))
    source = body["messages"][0]["content"][1]["source"]
    with Image.open(io.BytesIO(base64.b64decode(source["data"]))) as picture:
        assert picture.size == (1568, 314)
    assert source["media_type"] == "image/jpeg"  # no transparency: re-encoded as JPEG


def test_an_ollama_model_without_vision_gets_the_text_and_a_notice(server: LoopbackServer) -> None:
    asked = Message(role="user", parts=(TextPart(text="what is in this picture?"), SHOT))
    body, events = sent(
        server, "ollama", (asked,), show={**OLLAMA_SHOW, "capabilities": ["completion", "tools"]}
    )
    (message,) = body["messages"]
    assert "images" not in message and message["content"].startswith(
        "what is in this picture?\n\n[image shot.png"
    )
    assert any(isinstance(e, Notice) and "does not take images" in e.message for e in events)


def test_an_image_is_stored_encrypted_and_comes_back_whole(tmp_path: Path) -> None:
    """read_file's image goes into the SQLite store sealed like any content: the bytes (raw
    or base64) are nowhere in the database files, and the resumed session has them exactly."""
    import os

    from ketch.testing import Harness, approve_all, call, text
    from ketch.testing.keyring_backend import throwaway_keyring

    noise = bytes(os.urandom(3 * 64 * 64))
    picture = Image.frombytes("RGB", (64, 64), noise)
    out = io.BytesIO()
    picture.save(out, format="PNG")
    data = out.getvalue()
    with throwaway_keyring():
        h = Harness.create(
            tmp_path,
            script=[call("read_file", {"path": "noise.png"}), text("static")],
            bundled=["store", "crypto", "fs"],
        )
        (h.workspace / "noise.png").write_bytes(data)
        h.run("what is in noise.png?", approver=approve_all)
        h.kernel.end(h.session)
        state = Path(h.environ["KETCH_STATE_DIR"])
        files = [p for p in state.rglob("*") if p.is_file()]
        assert any(p.name == "sessions.db" for p in files)
        blob = b"".join(p.read_bytes() for p in files)
        # many short slices: a long value is split over SQLite's overflow pages
        encoded = base64.b64encode(data)
        needles = [encoded[i : i + 40] for i in range(0, len(encoded) - 40, 400)] + [
            data[i : i + 24] for i in range(0, len(data) - 24, 400)
        ]
        assert len(needles) > 60 and not [n for n in needles if n in blob]
        record = h.kernel.store.load_session(h.session.id)  # type: ignore[union-attr]
    (result,) = [r for m in record.transcript for r in m.tool_results]
    assert result.images[0].data == data and result.images[0].media_type == "image/png"


@pytest.mark.parametrize("kind", KINDS)
def test_an_at_image_on_the_command_line_reaches_each_provider_in_its_own_form(
    tmp_path: Path, server: LoopbackServer, kind: str
) -> None:
    """``ketch -p "what is in @shot.png"``, end to end: the attachment is read through the
    read rules (the policy allows a workspace read), and the request body carries the
    image in the provider's own form."""
    from .recordings import MODEL
    from .test_providers_cli import CASES, ketch

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "shot.png").write_bytes(SHOT.data)
    serve_plain(server, kind)
    env = {
        **CASES[kind](server.url),
        "KETCH_PLUGINS": "openai,anthropic,ollama,gemini,headless,attach,fs,policy",
    }
    done = ketch(
        tmp_path,
        "-p",
        "what is in @shot.png",
        "--provider",
        kind,
        "--model",
        MODEL[kind],
        "--output-format",
        "json",
        env=env,
    )
    assert done.returncode == 0, done.stderr
    body = server.posts(PATHS[kind])[-1]
    wire = json.dumps(body[FIELD[kind]])
    expected = {
        "openai": '"image_url": {"url": "' + URI,
        "openai-responses": '"type": "input_image", "image_url": "' + URI + '", "detail": "auto"',
        "anthropic": '"source": {"type": "base64", "media_type": "image/png", "data": "' + B64,
        "ollama": '"images": ["' + B64,
        "gemini": '"inlineData": {"mimeType": "image/png", "data": "' + B64,
    }[kind]
    assert expected in wire, wire[:2000]
    assert "what is in @shot.png" in wire or "shot.png" in wire
