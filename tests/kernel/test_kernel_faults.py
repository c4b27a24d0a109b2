"""The turn survives faults (issue 12): each found by trying ketch, reproduced here with
real processes, real signals, a real loopback server and a real SQLite file.

Every test names the behaviour: a signal ends the turn as cancelled and exits 128 +
signal; whatever ends a turn, every tool call gets a result and one ``turn_end`` goes
out in every output format; a stream that stalls or only pretends to progress is cut
by a deadline that names itself; a failed attempt's partial output is withdrawn; bad
config is one line, never a traceback.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ketch import hookimpl
from ketch.errors import KetchError
from ketch.testing import Harness, call, calls, text
from ketch.testing.harness import isolated_env
from tests.kernel.kit import tools_plugins
from tests.providers.loopback import LoopbackServer, Reply

ROOT = Path(__file__).resolve().parents[2]


def cli_env(tmp_path: Path, script: list[dict[str, Any]], **extra: str) -> dict[str, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return {
        **os.environ,
        **isolated_env(tmp_path),
        "PYTHONPATH": str(ROOT),
        "KETCH_LOAD": "scripted=ketch.testing.scripted_plugin,faults=tests.kernel.fault_tools",
        "KETCH_SCRIPT": str(path),
        **extra,
    }


def ketch(
    tmp_path: Path, env: dict[str, str], *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "ketch", "--provider", "scripted", *args],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=timeout,
    )


# --- signals ----------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_cancels_the_turn_keeps_finished_results_and_exits_128_plus_signal(
    tmp_path: Path, signum: int
) -> None:
    env = cli_env(tmp_path, [calls(("quick", {}), ("slow", {})), text("never")])
    (tmp_path / "ws").mkdir()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ketch",
            "--provider",
            "scripted",
            "-p",
            "go",
            "--output-format",
            "stream-json",
        ],
        cwd=tmp_path / "ws",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        lines.append(line)
        if '"tool_started"' in line and '"slow"' in line:
            break
    time.sleep(0.3)  # slow is running
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    events = [json.loads(x) for x in (lines + out.splitlines()) if x.strip()]
    assert proc.returncode == 128 + signum
    assert events[-1]["type"] == "turn_end" and events[-1]["stop_reason"] == "cancelled"
    assert [e for e in events if e["type"] == "turn_end"] == [events[-1]]
    outcomes = {
        e["name"]: (e["outcome"], e["output"]) for e in events if e["type"] == "tool_result"
    }
    assert outcomes["quick"] == ("succeeded", "quick done")  # not relabelled by the cancel
    assert outcomes["slow"][0] == "cancelled"
    (results,) = [
        e["message"]["parts"]
        for e in events
        if e["type"] == "message" and e["message"]["role"] == "tool"
    ]
    assert [(r["name"], r["output"]) for r in results][0] == ("quick", "quick done")
    assert "Traceback" not in err


def test_cancel_in_process_keeps_the_results_of_calls_that_finished(tmp_path: Path) -> None:
    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[calls(("touch", {"path": "a.txt"}), ("sleepy", {"text": "z"})), text("x")],
        plugins=plugins,
        bundled=["guards"],
    )

    async def scenario() -> Any:
        task = asyncio.create_task(h.turn("go"))
        while not any(e.type == "tool_started" and e.name == "sleepy" for e in h.events):
            await asyncio.sleep(0.01)
        task.cancel()
        return await task

    end = asyncio.run(scenario())
    assert end.stop_reason == "cancelled"
    results = h.session.transcript[-1].tool_results
    assert [(r.name, r.ok, r.output) for r in results][0] == ("touch", True, "created a.txt")
    assert results[1].name == "sleepy" and not results[1].ok and "Cancelled" in results[1].output


# --- exception-safe turn ----------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["text", "json", "stream-json"])
@pytest.mark.parametrize("fault", ["ketch", "crash"])
def test_a_turn_stopped_by_a_plugin_ends_cleanly_in_every_output_format(
    tmp_path: Path, fmt: str, fault: str
) -> None:
    """A KetchError is a deliberate stop (the turn ends with its message); a plain bug
    in a plugin is reported and skipped (the turn goes on). Either way: no traceback,
    every call answered, one final line."""
    env = cli_env(
        tmp_path,
        [calls(("quick", {}), ("quick", {"note": "2"})), text("after")],
        FAULT_AFTER_QUICK=fault,
    )
    done = ketch(tmp_path, env, "-p", "go", "--output-format", fmt)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    if fault == "crash":
        assert (
            done.returncode == 0 and "plugin 'faults' failed in ketch_after_tool_use" in done.stderr
        )
        assert done.stderr.count("ZeroDivisionError") == 1  # reported once, not per call
        return
    assert done.returncode == 1
    if fmt == "text":
        assert "the lint hook could not run" in done.stderr
    elif fmt == "json":
        payload = json.loads(done.stdout)
        assert payload["is_error"] and payload["stop_reason"] == "error"
        assert any("the lint hook could not run" in e["message"] for e in payload["errors"])
    else:
        events = [json.loads(line) for line in done.stdout.splitlines()]
        assert events[-1]["type"] == "turn_end" and events[-1]["stop_reason"] == "error"
        assert any(
            e["type"] == "error" and "the lint hook could not run" in e["message"] for e in events
        )
        calls_seen = {e["id"] for e in events if e["type"] == "tool_call"}
        answered = {
            p["tool_call_id"]
            for e in events
            if e["type"] == "message"
            for p in e["message"]["parts"]
            if p["type"] == "tool_result"
        }
        assert calls_seen and calls_seen <= answered


def test_after_a_stopped_turn_the_next_request_carries_no_unanswered_call(tmp_path: Path) -> None:
    class Stop:
        @hookimpl
        def ketch_after_tool_use(self, call: Any) -> None:
            raise KetchError("stopped on purpose")

    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[calls(("touch", {"path": "a"}), ("touch", {"path": "b"})), text("second")],
        plugins=[*plugins, ("stop", Stop())],
        bundled=["guards"],
    )
    end = h.run("first")
    assert (
        end.stop_reason == "error"
        and (h.workspace / "a").exists()
        and not (h.workspace / "b").exists()
    )
    h.run("again")
    request = h.provider.requests[-1]
    asked = [c.id for m in request.messages for c in m.tool_calls]
    answered = [r.tool_call_id for m in request.messages for r in m.tool_results]
    assert asked and sorted(asked) == sorted(answered)


def test_a_store_that_is_full_still_ends_the_stream_with_turn_end(tmp_path: Path) -> None:
    """A real SQLITE_FULL (the database may not grow) in the middle of a turn."""
    from ketch.testing.harness import patched_environ
    from ketch.testing.keyring_backend import throwaway_keyring
    from ketch_store.store import SqliteStore

    with throwaway_keyring():
        _full_store_turn(tmp_path, patched_environ, SqliteStore)


def _full_store_turn(tmp_path: Path, patched_environ: Any, SqliteStore: Any) -> None:  # noqa: N803
    h = Harness.create(
        tmp_path,
        script=[text("warm"), call("echo", {"text": "big " * 20000}), text("done")],
        plugins=tools_plugins("allow")[0],
        bundled=["guards", "store", "crypto"],
    )
    seen: list[Any] = []
    h.session.listeners.append(seen.append)
    h.run("warm up")
    with patched_environ({k: v for k, v in h.environ.items() if k.startswith(("KETCH_", "XDG_"))}):
        store = h.kernel.store
    if not isinstance(store, SqliteStore):
        pytest.skip(f"no encrypted store here: {h.kernel.notices}")
    pages = store.conn.execute("PRAGMA page_count").fetchone()[0]
    store.conn.execute(f"PRAGMA max_page_count = {pages}")
    end = h.run("now fill it")
    assert seen[-1].type == "turn_end" and seen[-1] is end or seen[-1] == end
    assert end.stop_reason == "error"
    assert any(e.type == "error" and "full" in e.message for e in seen)


# --- streams that stall or only pretend to progress ------------------------------------------------


def _sse(*payloads: dict[str, Any]) -> list[bytes]:
    return [f"data: {json.dumps(p)}\n\n".encode() for p in payloads]


def _chunk(content: str | None = None) -> dict[str, Any]:
    delta: dict[str, Any] = {"role": "assistant"} if content is None else {"content": content}
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": None}],
    }


FINISH = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "model": "m",
    "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
}


def openai_harness(tmp_path: Path, server: LoopbackServer, **provider: Any) -> Harness:
    table = "".join(f"{k} = {json.dumps(v)}\n" for k, v in provider.items())
    config = f'[providers.openai]\nbase_url = "{server.url}/v1"\nmodel = "m"\napi_key_required = false\n{table}[loop]\nmax_retries = 3\n'
    return Harness.create(
        tmp_path, config=config, provider_name="openai", bundled=["openai", "retry", "stream_watch"]
    )


def test_a_stream_of_empty_deltas_is_cut_by_progress_timeout(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        pretending = Reply(
            chunks=_sse(_chunk(), *[_chunk("")] * 400), pause=0.05
        )  # 20 s of nothing
        server.queue("/v1/chat/completions", pretending, pretending)
        h = openai_harness(tmp_path, server, progress_timeout=1.0)
        began = time.monotonic()
        end = h.run("hello")
        elapsed = time.monotonic() - began
    errors = h.of_type("error")
    assert end.stop_reason == "error" and elapsed < 10
    assert (
        errors[0].retryable
        and errors[0].kind == "network"
        and "progress_timeout" in errors[0].message
    )
    assert len(server.posts("/v1/chat/completions")) == 2  # a stall is retried once, not forever
    assert "progress_timeout" in errors[-1].message and "[providers.openai]" in errors[-1].message


def test_a_silent_server_is_cut_by_read_timeout(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        silent = Reply(chunks=[*_sse(_chunk()), *_sse(_chunk("late"))], pause=30)
        server.queue("/v1/chat/completions", silent, silent)
        h = openai_harness(tmp_path, server, read_timeout=1.0)
        began = time.monotonic()
        end = h.run("hello")
        elapsed = time.monotonic() - began
    errors = h.of_type("error")
    assert end.stop_reason == "error" and elapsed < 10
    assert (
        errors[-1].kind == "network"
        and "no data" in errors[-1].message
        and "read_timeout" in errors[-1].message
    )


@pytest.mark.parametrize("answered_first", [False, True])
def test_a_silent_server_is_not_blamed_for_keep_alives_when_both_deadlines_are_equal(
    tmp_path: Path, answered_first: bool
) -> None:
    """read_timeout == progress_timeout and the server sends nothing (after its headers,
    or after a first delta): whichever deadline fires first, the message says no data
    arrived, never that the stream sent only keep-alives or empty deltas."""
    first = _sse(_chunk("early")) if answered_first else [b""]
    with LoopbackServer() as server:
        silent = Reply(chunks=[*first, *_sse(_chunk("late"))], pause=30)
        server.queue("/v1/chat/completions", silent, silent)
        h = openai_harness(tmp_path, server, read_timeout=1.0, progress_timeout=1.0)
        end = h.run("hello")
    errors = h.of_type("error")
    assert end.stop_reason == "error" and errors
    for error in errors:
        assert "keep-alive" not in error.message and "empty deltas" not in error.message, error
        assert "no data" in error.message and "read_timeout" in error.message, error


def test_a_slow_stream_shows_that_ketch_is_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ketch_stream_watch import watch

    monkeypatch.setattr(watch, "WAITING_EVERY", 0.2)
    with LoopbackServer() as server:
        server.queue(
            "/v1/chat/completions",
            Reply(
                chunks=[
                    *_sse(_chunk(), _chunk("")),
                    *_sse(_chunk("hi"), FINISH),
                    b"data: [DONE]\n\n",
                ],
                pause=0.5,
            ),
        )
        h = openai_harness(tmp_path, server)
        end = h.run("hello")
    waiting = h.of_type("waiting")
    assert end.stop_reason == "end_turn" and end.text == "hi"
    assert waiting and waiting[0].elapsed >= 0.15 and waiting[0].timeout == 480.0


def test_a_failed_attempt_s_partial_output_is_withdrawn(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        broken = Reply(chunks=_sse(_chunk(), _chunk("PARTIAL ")), drop=True)
        whole = Reply(chunks=[*_sse(_chunk(), _chunk("FINAL"), FINISH), b"data: [DONE]\n\n"])
        server.queue("/v1/chat/completions", broken, whole)
        h = openai_harness(tmp_path, server)
        end = h.run("hello")
    kinds = [e.type for e in h.events if e.type in ("text_delta", "retry", "turn_end")]
    assert kinds == ["text_delta", "retry", "text_delta", "turn_end"]
    (retry,) = h.of_type("retry")
    assert retry.discard and retry.attempt == 1 and end.text == "FINAL"


def test_a_retry_before_any_output_has_nothing_to_discard(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        overloaded = Reply.json(
            529, {"error": {"type": "overloaded_error", "message": "busy"}}, **{"retry-after": "0"}
        )
        whole = Reply(chunks=[*_sse(_chunk(), _chunk("ok"), FINISH), b"data: [DONE]\n\n"])
        server.queue("/v1/chat/completions", overloaded, whole)
        h = openai_harness(tmp_path, server)
        h.run("hello")
    (retry,) = h.of_type("retry")
    assert not retry.discard


def test_the_text_frontend_marks_the_restart(tmp_path: Path) -> None:
    with LoopbackServer() as server:
        server.queue(
            "/v1/chat/completions",
            Reply(chunks=_sse(_chunk(), _chunk("PARTIAL ")), drop=True),
            Reply(chunks=[*_sse(_chunk(), _chunk("FINAL"), FINISH), b"data: [DONE]\n\n"]),
        )
        env = {
            **os.environ,
            **isolated_env(tmp_path),
            "OPENAI_API_KEY": "k",
            "OPENAI_BASE_URL": f"{server.url}/v1",
        }
        (tmp_path / "ws").mkdir()
        done = subprocess.run(
            [sys.executable, "-m", "ketch", "--provider", "openai", "--model", "m", "-p", "hi"],
            cwd=tmp_path / "ws",
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 0 and done.stdout.strip() == "FINAL"
    assert "trying the model again (attempt 2); its partial output is discarded" in done.stderr


# --- bad input is never a traceback ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('timeout = "slow"', "providers.openai.timeout: Input should be a valid number"),
        ("headers = 7", "providers.openai.headers: Input should be a valid dictionary"),
        ("read_timeout = -1", "providers.openai.read_timeout: Input should be greater than 0"),
    ],
)
def test_a_wrong_type_in_a_provider_table_is_one_line(
    tmp_path: Path, table: str, expected: str
) -> None:
    env = {**os.environ, **isolated_env(tmp_path), "OPENAI_API_KEY": "k"}
    config = Path(env["KETCH_CONFIG_DIR"]) / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f'[providers.openai]\nmodel = "m"\n{table}\n')
    (tmp_path / "ws").mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "ketch", "--provider", "openai", "-p", "hi"],
        cwd=tmp_path / "ws",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert f"{config}:3: {expected}" in line


@pytest.mark.parametrize("command", [["config", "path"], ["config", "show"], ["-p", "hi"]])
def test_hostile_config_files_are_refused_with_a_notice(tmp_path: Path, command: list[str]) -> None:
    env = cli_env(tmp_path, [text("fine")])
    user = Path(env["KETCH_CONFIG_DIR"]) / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text("a = " + "[" * 20000 + "]" * 20000 + "\n")  # RecursionError for tomllib
    workspace_config = tmp_path / "ws" / ".ketch" / "config.toml"
    workspace_config.parent.mkdir(parents=True)
    workspace_config.write_text('deny = ["' + "x" * (1024 * 1024 + 10) + '"]\n')  # over 1 MiB
    began = time.monotonic()
    done = ketch(tmp_path, env, *command)
    assert time.monotonic() - began < 20
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    assert done.returncode == 0, done.stderr
    if command != ["config", "path"]:
        assert "nested too deeply" in done.stderr and "more than the 1,048,576" in done.stderr


def test_a_deleted_working_directory_is_one_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    probe = "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); from ketch.cli import main; sys.exit(main(['config', 'path']))"
    done = subprocess.run(
        [sys.executable, "-c", probe, str(gone)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip()
        == "ketch: the current directory no longer exists (was it deleted?); cd into an existing directory and run ketch again"
    )


# --- reporting, stop hooks, leftovers ----------------------------------------------------------------


def test_a_failing_observer_is_reported_once_however_often_it_fails(tmp_path: Path) -> None:
    class Broken:
        @hookimpl
        def ketch_event(self, event: Any) -> None:
            raise ValueError("observer bug")

    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[call("echo", {"text": "a"}), call("echo", {"text": "b"}), text("ok")],
        plugins=[*plugins, ("broken", Broken())],
        bundled=["guards"],
    )
    reported: list[str] = []
    h.kernel.pm.report = reported.append
    end = h.run("x")
    assert end.stop_reason == "end_turn"
    (failure,) = h.kernel.pm.failures
    assert failure.count == len(h.events) > 5
    assert len(reported) == 1 and h.kernel.pm.infos["broken"].warnings == [
        "ketch_event: ValueError: observer bug"
    ]


def test_a_stop_hook_that_always_blocks_cannot_keep_a_turn_going_forever(tmp_path: Path) -> None:
    ran: list[str] = []

    class Nag:
        @hookimpl
        def ketch_stop(self, event: Any) -> Any:
            from ketch.verdicts import HookVerdict

            ran.append(event.text)
            return HookVerdict(block=True, reason="again")

    plugins, _ = tools_plugins("allow")
    h = Harness.create(
        tmp_path,
        script=[text(f"answer {n}") for n in range(12)],
        plugins=[*plugins, ("nag", Nag())],
        bundled=["guards"],
    )
    end = h.run("x")
    assert ran == [f"answer {n}" for n in range(8)]  # eight blocks honoured, then no more
    assert end.text == "answer 8" and len(h.provider.requests) == 9


def test_a_killed_write_leaves_no_temp_file_after_the_next_start(tmp_path: Path) -> None:
    """A writer SIGKILLed between writing its temp file and renaming it: the next
    session start sweeps the leftover (its writer is dead), not a live writer's."""
    from ketch_fs.leftovers import sweep

    workspace = tmp_path / "ws"
    (workspace / "deep" / "er").mkdir(parents=True)
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    victim.kill()
    victim.wait()
    dead = workspace / "deep" / "er" / f".big.bin.ketch-{victim.pid}-0123abcd.tmp"
    dead.write_bytes(b"\0" * 1_000_000)
    alive = workspace / f".live.txt.ketch-{os.getpid()}-89abcdef.tmp"
    alive.write_text("being written")
    ordinary = workspace / "deep" / "notes.tmp"
    ordinary.write_text("mine")
    removed = sweep(workspace)
    assert removed == [dead] and not dead.exists() and alive.exists() and ordinary.exists()


def test_detection_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    """The interactive shell builds providers inside its event loop: detecting a local
    server must not call asyncio.run there (today: 'coroutine was never awaited')."""
    import warnings

    from ketch.providers import ProviderConfig, ProviderKind

    async def detect() -> ProviderConfig:
        return ProviderConfig(name="found", kind="found", base_url="http://127.0.0.1:1", model="m")

    class Local:
        @hookimpl
        def ketch_register_providers(self, register: Any) -> None:
            register(
                ProviderKind(
                    kind="found", create=lambda cfg, key: None, needs_key=False, detect=detect
                )
            )

    h = Harness.create(tmp_path, plugins=[("local", Local())], bundled=["guards"])
    h.kernel.settings.__dict__["provider"] = None

    async def inside_a_loop() -> str | None:
        return h.kernel.provider_config()[0].name

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert asyncio.run(inside_a_loop()) == "found"


def test_a_notice_is_said_once_per_process_not_per_session(tmp_path: Path) -> None:
    """/clear or /resume starts another session on the same kernel: what the person was
    told at startup is not repeated."""
    plugins, _ = tools_plugins("allow")
    h = Harness.create(tmp_path, plugins=plugins, bundled=["guards"])
    h.kernel.notices.append("sandbox: bwrap is not installed")
    seen: list[str] = []
    first = h.kernel.new_session(
        provider=h.provider, listeners=[lambda e: seen.append(getattr(e, "message", ""))]
    )
    second = h.kernel.new_session(
        provider=h.provider, listeners=[lambda e: seen.append(getattr(e, "message", ""))]
    )
    assert first.id != second.id and seen.count("sandbox: bwrap is not installed") == 1
