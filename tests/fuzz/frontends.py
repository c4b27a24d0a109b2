"""The stdio frontends under seeded hostile lines: one driver per frontend.

Each driver feeds ``count`` lines from :func:`tests.fuzz.generate.lines` to the real
thing and judges it by what the issue asks: no traceback, no hang past the deadline,
and the next valid line still works. It returns a :class:`Report` (lines by kind, time
taken, every failure with its seed and index, so it can be replayed); the tests assert
it has no failures, ``benchmarks/fuzz_frontends.py`` prints it for longer sweeps.

* ``acp``: one ``ketch acp`` process; after every line a probe (``initialize`` with a
  fresh id) must be answered; every line ketch writes must be JSON-RPC; stdin's EOF
  must end the process with status 0.
* ``stream_json``: one ``ketch -p --input-format stream-json`` process; every
  ``probe_every`` lines a probe user message must get its turn; every stdout line is a
  JSON event; EOF ends it.
* ``hook_outputs``: what a PreToolUse, PostToolUse, UserPromptSubmit and Stop hook
  prints, read by the hooks plugin's own handlers in-process (thousands), plus real hook
  processes printing the lines around real tool calls; garbage never allows a call.
* ``prompt_command_outputs``: what ``--permission-prompt-command`` prints, read by the
  headless plugin's approver in-process, plus real processes; only a well-formed
  ``allow`` ever approves.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fuzz.generate import lines
from tests.stdio_kit import NoAnswer, StdioProcess

ROOT = Path(__file__).resolve().parents[2]
SCRIPTED = "ketch.testing.scripted_plugin"


@dataclass
class Report:
    frontend: str
    seed: int
    lines: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, kind: str) -> None:
        self.lines += 1
        self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def fail(self, index: int, kind: str, what: str) -> None:
        if len(self.failures) < 20:
            self.failures.append(f"seed {self.seed} line {index} ({kind}): {what}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "frontend": self.frontend,
            "seed": self.seed,
            "lines": self.lines,
            "kinds": self.kinds,
            "failures": self.failures,
            "seconds": round(self.seconds, 2),
        }


def child_env(home: Path, **extra: str) -> dict[str, str]:
    from ketch.testing.harness import isolated_env

    config = Path(isolated_env(home)["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text('[storage]\nencryption = "off"\n', encoding="utf-8")
    return {
        **os.environ,
        **isolated_env(home),
        "KETCH_LOAD": SCRIPTED,
        "PYTHONPATH": str(ROOT),
        **extra,
    }


def _traceback(text: str) -> bool:
    return "Traceback (most recent call last)" in text or "Event loop is closed" in text


# --- ACP -------------------------------------------------------------------------------------


def _acp_message(workspace: str) -> Any:
    def make(rng: random.Random) -> Any:
        request_id = rng.choice([rng.randrange(1_000_000), f"id-{rng.randrange(1000)}"])
        session = rng.choice(["ses_unknown", "", "x" * 40])
        choices: list[Any] = [
            ("initialize", {"protocolVersion": rng.choice([1, 2, 0]), "clientCapabilities": {}}),
            ("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}),
            (
                "session/set_mode",
                {"sessionId": session, "modeId": rng.choice(["plan", "build", "yolo"])},
            ),
            (
                "session/set_config_option",
                {"sessionId": session, "configId": "mode", "value": "plan"},
            ),
            ("session/load", {"sessionId": session, "cwd": workspace, "mcpServers": []}),
            ("session/list", {"cwd": workspace}),
            ("session/new", {"cwd": "/nonexistent/fuzz", "mcpServers": []}),
            ("authenticate", {"methodId": "x"}),
            ("nope/" + str(rng.randrange(9)), {}),
            ("_ketch/ext", {"a": 1}),
        ]
        if rng.random() < 0.01:
            choices.append(("session/new", {"cwd": workspace, "mcpServers": []}))
        method, params = rng.choice(choices)
        if rng.random() < 0.15:  # a notification
            return {
                "jsonrpc": "2.0",
                "method": rng.choice(["session/cancel", method]),
                "params": params,
            }
        if rng.random() < 0.05:  # a response to a request ketch never made
            return {"jsonrpc": "2.0", "id": rng.randrange(10_000), "result": {"outcome": {}}}
        return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}

    return make


def _json_rpc_ok(line: bytes) -> str | None:
    """Why an output line is not JSON-RPC 2.0 (None: it is)."""
    try:
        value = json.loads(line)
    except ValueError:
        return f"not JSON: {line[:120]!r}"
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict) or item.get("jsonrpc") != "2.0":
            return f"not a JSON-RPC message: {line[:120]!r}"
        error = item.get("error")
        if error is not None and (
            not isinstance(error.get("code"), int) or not isinstance(error.get("message"), str)
        ):
            return f"a malformed error: {line[:200]!r}"
    return None


def fuzz_acp(work: Path, seed: int, count: int, *, deadline: float = 20.0) -> Report:
    report = Report("acp", seed)
    began = time.monotonic()
    workspace = work / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    env = child_env(work / "home", KETCH_SCRIPT=str(work / "script.json"))
    with StdioProcess(
        [sys.executable, "-m", "ketch", "acp", "--provider", "scripted"],
        cwd=workspace,
        env=env,
        stderr_path=work / "acp-stderr.log",
    ) as agent:
        for index, (kind, line) in enumerate(lines(seed, count, _acp_message(str(workspace)))):
            report.count(kind)
            probe = f"probe-{index}"
            try:
                agent.write(line + b"\n")
                agent.send(
                    {
                        "jsonrpc": "2.0",
                        "id": probe,
                        "method": "initialize",
                        "params": {"protocolVersion": 1},
                    }
                )
                while True:
                    raw = agent.next_line(deadline)
                    if raw is None:
                        report.fail(index, kind, "ketch acp closed stdout")
                        break
                    problem = _json_rpc_ok(raw)
                    if problem:
                        report.fail(index, kind, problem)
                        continue
                    value = json.loads(raw)
                    if isinstance(value, dict) and value.get("id") == probe:
                        if "result" not in value:
                            report.fail(index, kind, f"the probe failed: {value}")
                        break
            except (NoAnswer, BrokenPipeError) as exc:
                report.fail(index, kind, f"no answer to the next valid line ({exc})")
                break
            if agent.proc.poll() is not None:
                report.fail(index, kind, f"ketch acp exited with {agent.proc.returncode}")
                break
        agent.close_stdin()
        try:
            code = agent.wait(deadline)
            if code != 0:
                report.fail(report.lines, "eof", f"exit status {code} at EOF, not 0")
        except NoAnswer:
            report.fail(report.lines, "eof", f"still running {deadline:g} s after EOF")
        log = agent.stderr()
    if _traceback(log):
        report.fail(report.lines, "stderr", "a traceback on stderr: " + log[-1500:])
    report.seconds = time.monotonic() - began
    return report


# --- stream-json input -------------------------------------------------------------------------

PNG_1PX = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def _stream_message(rng: random.Random) -> Any:
    content: Any = rng.choice(
        [
            "hello",
            [{"type": "text", "text": "hi"}],
            [
                {"type": "text", "text": "see"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG_1PX},
                },
            ],
        ]
    )
    choice = rng.random()
    if choice < 0.1:
        return {
            "type": "control_request",
            "request_id": f"r{rng.randrange(99)}",
            "request": {"subtype": "interrupt"},
        }
    if choice < 0.15:
        return {"type": "control_request", "request_id": "r", "request": {"subtype": "set_model"}}
    message = {"type": "user", "message": {"role": "user", "content": content}}
    if choice < 0.3:
        message["shouldQuery"] = False
    return message


def fuzz_stream_json(
    work: Path, seed: int, count: int, *, probe_every: int = 50, deadline: float = 30.0
) -> Report:
    report = Report("stream_json", seed)
    began = time.monotonic()
    workspace = work / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    env = child_env(work / "home", KETCH_SCRIPT=str(work / "script.json"))
    argv = [
        sys.executable,
        "-m",
        "ketch",
        "--provider",
        "scripted",
        "-p",
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
    ]
    with StdioProcess(argv, cwd=workspace, env=env, stderr_path=work / "stream-stderr.log") as proc:

        def wait_for_probe(text: str, index: int, kind: str) -> bool:
            prompted = False
            while True:
                raw = proc.next_line(deadline)
                if raw is None:
                    report.fail(index, kind, "stdout closed before the probe's turn")
                    return False
                try:
                    event = json.loads(raw)
                except ValueError:
                    report.fail(index, kind, f"a stdout line that is not JSON: {raw[:120]!r}")
                    continue
                if event.get("type") == "user_prompt" and text in json.dumps(event):
                    prompted = True
                if prompted and event.get("type") == "turn_end":
                    return True

        for index, (kind, line) in enumerate(lines(seed, count, _stream_message)):
            report.count(kind)
            try:
                proc.write(line + b"\n")
                if (index + 1) % probe_every == 0:
                    text = f"probe {index}"
                    proc.send({"type": "user", "message": {"role": "user", "content": text}})
                    if not wait_for_probe(text, index, kind):
                        break
            except NoAnswer as exc:
                report.fail(index, kind, f"the probe got no turn ({exc})")
                break
            except BrokenPipeError:
                report.fail(index, kind, f"ketch exited ({proc.proc.poll()}) mid-stream")
                break
        proc.close_stdin()
        try:
            code = proc.wait(deadline * 2)
            if code not in (0, 1):
                report.fail(report.lines, "eof", f"exit status {code} at EOF")
        except NoAnswer:
            report.fail(report.lines, "eof", "still running after EOF")
        log = proc.stderr()
    if _traceback(log):
        report.fail(report.lines, "stderr", "a traceback on stderr: " + log[-1500:])
    report.seconds = time.monotonic() - began
    return report


# --- what hooks print ----------------------------------------------------------------------------


def _hook_answer(rng: random.Random) -> Any:
    decision = rng.choice(["allow", "deny", "ask", "defer", "maybe"])
    return rng.choice(
        [
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": decision,
                    "permissionDecisionReason": "r",
                }
            },
            {
                "hookSpecificOutput": {
                    "permissionDecision": "deny",
                    "updatedInput": {"path": "x.txt", "content": "y"},
                }
            },
            {"decision": rng.choice(["approve", "block"]), "reason": "legacy"},
            {"continue": rng.choice([True, False]), "stopReason": "stop", "systemMessage": "note"},
            {
                "hookSpecificOutput": {
                    "hookEventName": "UserPromptSubmit",
                    "additionalContext": "ctx",
                }
            },
        ]
    )


def _call() -> Any:
    from ketch.policy import ProposedCall
    from ketch.tools import Effect

    return ProposedCall(
        id="call_1",
        tool="write_file",
        input={"path": "a.txt", "content": "x"},
        effects=frozenset({Effect.WRITE}),
        mutating=True,
    )


def _granting(text: str) -> bool:
    """Whether hook output could legitimately allow a call: the words must be there."""
    return "allow" in text or "approve" in text


async def _hook_outputs_in_process(work: Path, seed: int, count: int, report: Report) -> None:
    from ketch.testing import Harness
    from ketch_hooks import handlers, runner
    from ketch_hooks.settings import HookCommand

    harness = Harness.create(
        work / "in-process", bundled=["hooks", "fs"], settings={"profile": "manual"}
    )
    session = harness.session
    hook = HookCommand(command="fuzz", matcher="*")
    current: list[runner.HookRun] = []

    async def fake_run_event(*args: Any, **kwargs: Any) -> list[runner.HookRun]:
        return list(current)

    original = handlers.run_event
    handlers.run_event = fake_run_event  # type: ignore[assignment]
    try:
        rng = random.Random(seed)
        call = _call()
        for index, (kind, line) in enumerate(lines(seed, count, _hook_answer, huge=64 * 1024)):
            report.count(kind)
            text = line.decode("utf-8", "replace")
            code = rng.choice([0, 0, 0, 2, 1, 127, -9])
            current[:] = [runner.HookRun(hook, code, text, rng.choice(["", "err", text[:100]]))]
            try:
                verdict = await asyncio.wait_for(handlers.pre_tool_use(session, call), 10)
                if verdict is not None and verdict.decision == "allow" and not _granting(text):
                    report.fail(index, kind, f"garbage allowed a call: {text[:120]!r}")
                await asyncio.wait_for(handlers.user_prompt_submit(session, "hi"), 10)
            except Exception as exc:  # noqa: BLE001 - that is what the fuzzer looks for
                report.fail(index, kind, f"{type(exc).__name__}: {exc}")
    finally:
        handlers.run_event = original  # type: ignore[assignment]


def _real_hooks(work: Path, seed: int, count: int, report: Report) -> None:
    """Real hook processes: each prints the next line (and exits with a chosen code)
    before a real write_file call in a headless-like session with no approver."""
    from ketch.testing import Harness

    outputs = work / "hook-outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed + 1)
    fuzzed = list(lines(seed + 1, count, _hook_answer, huge=256 * 1024))
    for index, (_kind, line) in enumerate(fuzzed):
        (outputs / f"{index}.out").write_bytes(line)
        (outputs / f"{index}.code").write_text(str(rng.choice([0, 0, 2, 1])))
    (outputs / "next").write_text("0")
    script = outputs / "hook.sh"
    script.write_text(
        f'd={outputs}\nn=$(cat "$d/next")\necho $((n + 1)) > "$d/next"\n'
        'cat > /dev/null\ncat "$d/$n.out"\nexit $(cat "$d/$n.code")\n',
        encoding="utf-8",
    )
    config = (
        f'[[hooks.PreToolUse]]\nmatcher = "write_file"\ncommand = "sh {script}"\ntimeout = 10\n'
    )
    steps = [
        {"tool_calls": [{"name": "write_file", "input": {"path": f"f{i}.txt", "content": "x"}}]}
        for i in range(count)
    ]
    harness = Harness.create(
        work / "real",
        script=[*steps, {"text": "done"}],
        config=config,
        bundled=["hooks", "fs", "guards", "policy"],
    )
    began = time.monotonic()
    end = harness.run("write them all")
    if end.stop_reason not in ("end_turn", "max_iterations"):
        report.fail(count, "real", f"the turn ended {end.stop_reason}")
    for index, (kind, line) in enumerate(fuzzed):
        report.count(kind)
        written = (harness.workspace / f"f{index}.txt").exists()
        if written and not _granting(line.decode("utf-8", "replace")):
            report.fail(index, kind, f"garbage allowed a write: {line[:120]!r}")
    if time.monotonic() - began > 10 * count:
        report.fail(count, "real", "hooks took longer than their timeouts allow")


def fuzz_hook_outputs(work: Path, seed: int, count: int, *, real: int = 100) -> Report:
    report = Report("hook_outputs", seed)
    began = time.monotonic()
    asyncio.run(_hook_outputs_in_process(work, seed, count, report))
    if real:
        _real_hooks(work, seed, real, report)
    report.seconds = time.monotonic() - began
    return report


# --- what a permission prompt command prints -----------------------------------------------------


def _prompt_answer(rng: random.Random) -> Any:
    return {
        "decision": rng.choice(["allow", "deny", "ALLOW", "yes"]),
        "message": rng.choice(["ok", None, "no"]),
        "scope": rng.choice(["once", "session", "forever"]),
    }


def _well_formed_allow(line: bytes) -> bool:
    try:
        value = json.loads(line.decode("utf-8"))
    except (ValueError, RecursionError):
        return False
    return (
        isinstance(value, dict)
        and value.get("decision") == "allow"
        and value.get("scope", "once") in ("once", "session")
        and (value.get("message") is None or isinstance(value.get("message"), str))
    )


def _request() -> Any:
    from ketch.policy import ApprovalRequest

    return ApprovalRequest(
        call=_call(), reason="writes a file", summary="write a.txt", scope="write(a.txt)"
    )


async def _prompt_in_process(work: Path, seed: int, count: int, report: Report) -> None:
    from ketch_headless import prompt_command
    from ketch_process_kit import oneshot

    current: list[oneshot.Finished] = []

    async def fake_run_once(*args: Any, **kwargs: Any) -> oneshot.Finished:
        return current[0]

    original = oneshot.run_once
    oneshot.run_once = fake_run_once  # type: ignore[assignment]
    try:
        approver = prompt_command.PromptCommand(
            "fuzz", session_id="ses_fuzz", workspace=work, environ=dict(os.environ), timeout=5
        )
        rng = random.Random(seed)
        request = _request()
        for index, (kind, line) in enumerate(lines(seed, count, _prompt_answer)):
            report.count(kind)
            code = rng.choice([0, 0, 0, 1, None])
            current[:] = [
                oneshot.Finished(code, line, b"", "" if code is not None else "timed out after 5 s")
            ]
            try:
                answer = await asyncio.wait_for(approver(request), 10)
            except Exception as exc:  # noqa: BLE001
                report.fail(index, kind, f"{type(exc).__name__}: {exc}")
                continue
            if answer.approved and not (code == 0 and _well_formed_allow(line.strip())):
                report.fail(index, kind, f"approved on {line[:120]!r} (exit {code})")
    finally:
        oneshot.run_once = original  # type: ignore[assignment]


async def _prompt_real(work: Path, seed: int, count: int, report: Report) -> None:
    from ketch_headless.prompt_command import PromptCommand

    outputs = work / "prompt-outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    request = _request()
    for index, (kind, line) in enumerate(lines(seed + 1, count, _prompt_answer, huge=512 * 1024)):
        report.count(kind)
        path = outputs / f"{index}.out"
        path.write_bytes(line)
        approver = PromptCommand(
            f"cat > /dev/null; cat {path}",
            session_id="ses_fuzz",
            workspace=work,
            environ=dict(os.environ),
            timeout=10,
        )
        began = time.monotonic()
        try:
            answer = await asyncio.wait_for(approver(request), 20)
        except Exception as exc:  # noqa: BLE001
            report.fail(index, kind, f"{type(exc).__name__}: {exc}")
            continue
        if time.monotonic() - began > 9:
            report.fail(index, kind, "the answer took as long as the timeout")
        allow = _well_formed_allow(line.strip())
        if answer.approved and not allow:
            report.fail(index, kind, f"approved on {line[:120]!r}")
        if allow and not answer.approved and kind == "valid":
            report.fail(index, kind, f"a well-formed allow was not honoured: {line[:120]!r}")


def fuzz_prompt_command_outputs(work: Path, seed: int, count: int, *, real: int = 100) -> Report:
    report = Report("prompt_command_outputs", seed)
    began = time.monotonic()
    asyncio.run(_prompt_in_process(work, seed, count, report))
    if real:
        asyncio.run(_prompt_real(work, seed, real, report))
    report.seconds = time.monotonic() - began
    return report


DRIVERS = {
    "acp": fuzz_acp,
    "stream_json": fuzz_stream_json,
    "hook_outputs": fuzz_hook_outputs,
    "prompt_command_outputs": fuzz_prompt_command_outputs,
}
