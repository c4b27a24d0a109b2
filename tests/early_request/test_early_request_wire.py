"""The answer to a request sent at launch, read off its socket, for every provider's
recorded wire format (the loopback server writes the recorded bytes, chunked, as the
provider did); and a stream cut in the middle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.providers.kit import PATHS
from tests.providers.loopback import LoopbackServer, Reply
from tests.providers.recordings import CANARY, OLLAMA_SHOW, recordings
from tests.providers.test_providers_cli import ANSWERS, CASES

from .kit import EARLY_THREAD, Starts

KINDS = ["openai", "openai-responses", "anthropic", "ollama", "gemini"]
MODELS = {"gemini": "gemini-2.5-flash"}


def starts_for(tmp_path: Path, server: LoopbackServer, kind: str) -> Starts:
    model = MODELS.get(kind, "m")
    env = CASES[kind](server.url)
    server.default("/api/show", Reply.json(200, OLLAMA_SHOW), method="POST")
    server.default(
        f"/v1beta/models/{model}",
        Reply.json(200, {"name": f"models/{model}", "inputTokenLimit": 1048576}),
        method="GET",
    )
    argv = ["--provider", kind, "--model", model, "--output-format", "stream-json"]
    return Starts(tmp_path, server.port, env, argv)


def path_for(kind: str) -> str:
    return (
        PATHS[kind]
        if kind != "gemini"
        else f"/v1beta/models/{MODELS['gemini']}:streamGenerateContent"
    )


@pytest.mark.parametrize("kind", KINDS)
def test_each_wire_format_is_read_from_the_request_sent_at_launch(
    tmp_path: Path, kind: str
) -> None:
    rec = recordings(kind)
    plain = Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    with LoopbackServer() as server:
        starts = starts_for(tmp_path, server, kind)
        server.queue(path_for(kind), plain, plain, plain)
        starts.warm()
        done, threads = starts.run("say three")
        assert done.returncode == 0, done.stderr[-2000:]
        assert threads[:1] == [EARLY_THREAD]
        events = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        assert events[-1]["type"] == "turn_end" and events[-1]["text"] == ANSWERS[kind]
        posts = server.posts(path_for(kind))
        assert len(posts) == 3  # one per start: the early one was the third's
        assert "say three" in json.dumps(posts[2])
    assert CANARY not in starts.record().read_text()  # the key's place is marked, never kept


def test_a_stream_cut_on_the_early_request_is_the_same_one_line_error(tmp_path: Path) -> None:
    rec = recordings("anthropic")
    plain = Reply(chunks=[rec["streams"]["plain"]], content_type=rec["content_type"])
    cut = rec["streams"]["plain"][: len(rec["streams"]["plain"]) // 2]
    dropped = Reply(chunks=[cut], content_type=rec["content_type"], drop=True)
    with LoopbackServer() as server:
        starts = starts_for(tmp_path, server, "anthropic")
        server.queue(path_for("anthropic"), plain, plain, dropped, dropped, dropped, dropped)
        starts.warm()
        done, threads = starts.run("say three")
        assert threads[:1] == [EARLY_THREAD]
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert done.stderr.strip().count("\n") == 0, done.stderr  # one line
