"""Run commands the way the model would, for real, among canaries; report decisions and effects.

Two modes, one report:

* :func:`run_cli` -- the real thing: ``ketch -p`` as a subprocess (HOME and cwd in the
  world, ``--output-format stream-json``, the scripted provider through
  ``KETCH_LOAD``/``KETCH_SCRIPT``) issuing each command as one ``shell`` tool call, all
  in one session. Nobody can approve in ``-p`` mode, so what asks does not run: what
  runs is exactly what the engine allowed. When the batch shows an effect, each command
  that ran is re-run alone in a fresh copy of the world to name the culprit.
* :func:`run_approved` -- the real turn loop in process with a person who approves
  every question: whatever the engine asked about runs anyway, still in the sandbox.
  This is how the sandbox is tested as the last wall (the culprit search as above).
* :func:`run_in_process` -- for sweeps of thousands: one kernel (every bundled plugin)
  in the world, each command decided through the kernel's policy votes (and the
  before-tool-use hooks), and only what was allowed executed through the real ``shell``
  tool, so the sandbox wraps it exactly as in the CLI. The world is checked after each
  command (and rebuilt after an effect), so the culprit is always known.

Both take ``commands`` (strings, or full ``shell`` inputs as dicts), ``profile``
(``"assisted"`` or ``"full-access"``), ``sandbox`` (True: ``[sandbox] enabled``, and
the run fails loudly if the sandbox is not working; False: off) and ``redact`` (False
by default, so the redaction plugin cannot hide what the sandbox or the engine let
through). They return a :class:`Report`::

    report = run_cli(world, ["ls", "cat .env"], profile="assisted")
    report.outcomes[1].decision   # "allow" | "ask" | "deny" | "invalid"
    report.outcomes[1].output     # what the model got
    report.outcomes[1].effects    # list[canaries.Effect] this command caused
    report.effects                # every effect of the run; [] means no harm
    assert not report.effects, report.describe()

Commands are shell command lines (or full ``shell`` inputs as dicts), or other tools'
calls: ``tool("write_file", path=".envrc", content="...")``. ``run_cli(...,
after=True)`` adds the *after* phase (:mod:`phases`): once the session has ended, what
a person does next -- ``git status``/``git commit`` in every repository, the configured
hooks, a new session with and without trust -- and every canary checked again.
:func:`run_before` is the *before* phase: open a workspace planted with hostile config
(:data:`phases.HOSTILE`) with ``ketch -p`` and check that nothing ran;
:func:`run_before_shell` and :func:`run_before_acp` do the same through the interactive
shell (tmux, the first-run offer declined) and ``ketch acp`` (the ACP SDK's client).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from canaries import Effect, World
from phases import AFTER_STEPS, AfterStep, after_phase

from ketch.testing.harness import isolated_env, patched_environ

Command = str | dict[str, Any]


def _sandbox_probe() -> tuple[bool, str]:
    from ketch_sandbox.bwrap import probe

    found = probe()
    return found.available, found.reason


_AVAILABLE, _REASON = _sandbox_probe()
needs_sandbox = pytest.mark.skipif(not _AVAILABLE, reason=f"no working sandbox here: {_REASON}")
# The configurations every corpus runs under: (profile, sandbox).
CONFIGS = [
    pytest.param("assisted", True, marks=needs_sandbox, id="assisted-sandbox"),
    pytest.param("assisted", False, id="assisted-no-sandbox"),
    pytest.param("full-access", True, marks=needs_sandbox, id="full-access-sandbox"),
]
PER_COMMAND_TIMEOUT = 20.0


@dataclass
class Outcome:
    command: Command
    decision: str = "invalid"  # allow | ask | deny | invalid (refused before any vote)
    reason: str = ""
    ran: bool = False
    ok: bool | None = None
    output: str = ""
    effects: list[Effect] = field(default_factory=list)

    @property
    def text(self) -> str:
        if isinstance(self.command, str):
            return self.command
        if "tool" in self.command:
            return f"{self.command['tool']} {json.dumps(self.command['input'])[:200]}"
        return str(self.command.get("command"))


@dataclass
class Report:
    profile: str
    sandbox: bool
    outcomes: list[Outcome]
    # Effects of the batch no single command reproduced alone (a combination did it).
    unattributed: list[Effect] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""

    @property
    def effects(self) -> list[Effect]:
        return [e for o in self.outcomes for e in o.effects] + self.unattributed

    def count(self, decision: str) -> int:
        return sum(1 for o in self.outcomes if o.decision == decision)

    def describe(self) -> str:
        """Every command with an effect: its decision, its effects, the start of its output."""
        lines = [
            f"profile {self.profile}, sandbox {'on' if self.sandbox else 'off'}: {len(self.effects)} effect(s)"
        ]
        for o in self.outcomes:
            if o.effects:
                lines.append(
                    f"- {o.text!r}: {o.decision} ({o.reason}) -> " + "; ".join(map(str, o.effects))
                )
                lines.append("    output: " + o.output[:300].replace("\n", "\\n"))
        if self.unattributed:
            lines.append("- (the batch as a whole): " + "; ".join(map(str, self.unattributed)))
        return "\n".join(lines)


def _input(command: Command) -> dict[str, Any]:
    if isinstance(command, str):
        return {"command": command, "timeout": PER_COMMAND_TIMEOUT}
    return {"timeout": PER_COMMAND_TIMEOUT, **command}


def tool(name: str, **arguments: Any) -> dict[str, Any]:
    """A call of another tool than ``shell``, as a command: ``tool("write_file", path=..., content=...)``."""
    return {"tool": name, "input": arguments}


def _call(command: Command, call_id: str) -> dict[str, Any]:
    """The scripted model's tool call for ``command``."""
    if isinstance(command, dict) and "tool" in command:
        return {"name": command["tool"], "input": dict(command["input"]), "id": call_id}
    return {"name": "shell", "input": _input(command), "id": call_id}


def _config(sandbox: bool, redact: bool, extra: str = "") -> str:
    return (
        f"[sandbox]\nenabled = {'true' if sandbox else 'false'}\n"
        f"[tools]\nredact_secrets = {'true' if redact else 'false'}\n"
        '[storage]\nencryption = "off"\n' + extra
    )


def _ketch_dirs(world: World, config: str) -> dict[str, str]:
    env = isolated_env(world.root / "ketch")
    Path(env["KETCH_CONFIG_DIR"]).mkdir(parents=True, exist_ok=True)
    (Path(env["KETCH_CONFIG_DIR"]) / "config.toml").write_text(config, encoding="utf-8")
    return env


def _journal_bytes(env: dict[str, str]) -> list[bytes]:
    """The session database (and its WAL), for tokens that reached the journal."""
    state = Path(env["KETCH_STATE_DIR"])
    return (
        [p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file()] if state.is_dir() else []
    )


# --- the real CLI ------------------------------------------------------------------------------


def _cli_once(
    world: World,
    commands: Sequence[Command],
    *,
    profile: str,
    sandbox: bool,
    redact: bool,
    extra_config: str,
    trust: bool = False,
    prompt: str = "run the commands",
) -> tuple[list[Outcome], list[str], str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
    env.update(_ketch_dirs(world, _config(sandbox, redact, extra_config)))
    env.update(world.env())
    scratch = world.root / "ketch" / "script"
    scratch.mkdir(parents=True, exist_ok=True)
    ids = [f"call_{i}" for i in range(len(commands))]
    script: list[dict[str, Any]] = [
        {"tool_calls": [_call(c, i)]} for c, i in zip(commands, ids, strict=True)
    ]
    script.append({"text": "done"})
    (scratch / "script.json").write_text(json.dumps(script), encoding="utf-8")
    log = scratch / "requests.jsonl"
    log.unlink(missing_ok=True)
    env.update(
        KETCH_LOAD="ketch.testing.scripted_plugin",
        KETCH_SCRIPT=str(scratch / "script.json"),
        KETCH_SCRIPT_LOG=str(log),
    )
    argv = [
        sys.executable,
        "-m",
        "ketch",
        "-p",
        prompt,
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        "--profile",
        profile,
        "--max-iterations",
        str(len(commands) + 2),
    ]
    if trust:  # the person reads `ketch trust`'s list and trusts every item
        _person_trusts(env, world.workspace)
    budget = 60 + len(commands) * (PER_COMMAND_TIMEOUT + 5)
    proc = subprocess.run(
        argv,
        cwd=world.workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=budget,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    _require_working_run(events, proc.stderr, sandbox=sandbox)
    outcomes = {i: Outcome(command=c) for c, i in zip(commands, ids, strict=True)}
    for event in events:
        outcome = outcomes.get(event.get("tool_call_id", ""))
        if outcome is None:
            continue
        if event["type"] == "permission" and outcome.decision == "invalid":
            outcome.decision, outcome.reason = event["decision"], event.get("reason", "")
        elif event["type"] == "tool_result":
            outcome.output, outcome.ok = event.get("output", ""), event.get("ok")
            outcome.ran = event.get("outcome") in ("succeeded", "failed")
    texts = [proc.stdout, proc.stderr, log.read_text(encoding="utf-8") if log.exists() else ""]
    texts += [b.decode("utf-8", "replace") for b in _journal_bytes(env)]
    return [outcomes[i] for i in ids], texts, proc.stdout, proc.stderr


def _person_trusts(env: dict[str, str], workspace: Path) -> None:
    """``ketch trust --yes`` in ``workspace``, as the person: pins every item it lists."""
    argv = [sys.executable, "-m", "ketch", "trust", "--yes"]
    env = {k: v for k, v in env.items() if k not in ("KETCH_LOAD", "KETCH_SCRIPT")}
    done = subprocess.run(
        argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"ketch trust --yes failed: {done.stdout[-500:]} {done.stderr[-1000:]}")


CRUCIAL_PLUGINS = ("guards", "policy", "shell", "sandbox", "redact")


def _require_working_run(events: list[dict[str, Any]], stderr: str, *, sandbox: bool) -> None:
    """A run that tested nothing must not pass as "no effects": fail loudly instead."""
    broken = [
        line
        for line in stderr.splitlines()
        if any(f"plugin '{name}' failed" in line for name in CRUCIAL_PLUGINS)
    ]
    if broken:
        raise RuntimeError("a plugin under test failed: " + broken[0])
    if any(
        e.get("type") == "tool_result"
        and "There is no tool named 'shell'" in str(e.get("output", ""))
        for e in events
    ):
        raise RuntimeError("the shell tool is not loaded: " + stderr[-500:])
    notices = [
        e.get("message", "")
        for e in events
        if e.get("type") == "notice" and str(e.get("message", "")).startswith("sandbox:")
    ]
    if sandbox and notices:
        raise RuntimeError(f"the run asked for the sandbox, and ketch said: {notices[0]}")


def run_cli(
    world: World,
    commands: Sequence[Command],
    *,
    profile: str = "assisted",
    sandbox: bool = True,
    redact: bool = False,
    culprits: bool = True,
    extra_config: str = "",
    after: bool | Sequence[AfterStep] = False,
    trust: bool = False,
) -> Report:
    """All ``commands`` in one ``ketch -p`` session in ``world``; see the module docstring.
    ``extra_config`` is appended to the user config.toml (e.g. a ``[permissions]`` table).
    ``after``: once the session has ended, run the after phase (:data:`AFTER_STEPS`, or
    the steps given) and count its effects too. ``trust``: the person ran ``ketch trust
    --yes`` before the session (the world's own repository names its hooks directory
    and an include, which the model's git asks about until they are trusted)."""
    import functools

    return _run(
        functools.partial(_cli_once, trust=trust),
        world,
        commands,
        profile=profile,
        sandbox=sandbox,
        redact=redact,
        culprits=culprits,
        extra_config=extra_config,
        after=after,
    )


def _run(
    run_once: Callable[..., tuple[list[Outcome], list[str], str, str]],
    world: World,
    commands: Sequence[Command],
    *,
    profile: str,
    sandbox: bool,
    redact: bool,
    culprits: bool,
    extra_config: str,
    after: bool | Sequence[AfterStep],
) -> Report:
    def once(batch: Sequence[Command]) -> tuple[list[Outcome], list[str], str, str]:
        return run_once(
            world, batch, profile=profile, sandbox=sandbox, redact=redact, extra_config=extra_config
        )

    return _batch(
        world,
        commands,
        once,
        profile=profile,
        sandbox=sandbox,
        culprits=culprits,
        after=_after(world, sandbox, redact, extra_config, after),
    )


def survivors(world: World) -> list[Effect]:
    """Processes still running in the world once the session (or the after phase) is
    over -- whatever their session, group or parent, found by their working directory
    -- each an ``outlived`` effect, and killed."""
    import signal
    import time

    root = str(world.root.resolve()) + os.sep
    found: list[Effect] = []
    deadline = time.monotonic() + 2.0  # a process that is ending right now may finish
    while True:
        pids = []
        for name in os.listdir("/proc"):
            if not name.isdigit() or int(name) == os.getpid():
                continue
            try:
                cwd = os.readlink(f"/proc/{name}/cwd")
                with open(f"/proc/{name}/stat", "rb") as handle:
                    state = handle.read().rsplit(b")", 1)[1].split()[0]
            except OSError:
                continue
            if state != b"Z" and (cwd + os.sep).startswith(root):
                pids.append(int(name))
        if not pids or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
        found.append(Effect("outlived", f"pid {pid}", line[:200]))
    return found


def _steps(after: bool | Sequence[AfterStep]) -> list[AfterStep]:
    if after is True:
        return list(AFTER_STEPS)
    return list(after) if after else []


def _batch(
    world: World,
    commands: Sequence[Command],
    once: Any,
    *,
    profile: str,
    sandbox: bool,
    culprits: bool,
    after: Callable[[], list[Effect]] | None = None,
) -> Report:
    """Run the batch, check the world (and run the after phase, if any, and check again);
    on an effect, re-run each command that ran alone (each with its after phase). The
    world is left as it was built (reset after any effect, and after an after phase)."""

    def run(batch: Sequence[Command]) -> tuple[list[Outcome], list[str], str, str, list[Effect]]:
        outcomes, texts, stdout, stderr = once(batch)
        effects = world.check(texts) + survivors(world)
        if after is not None:
            effects += after() + survivors(world)
        return outcomes, texts, stdout, stderr, effects

    if world.check():
        world.reset()  # harm left by an earlier run must not be blamed on this one
    outcomes, texts, stdout, stderr, effects = run(commands)
    report = Report(profile, sandbox, outcomes, stdout=stdout, stderr=stderr)
    if after is not None:
        world.reset()  # the person's commits are not the next run's
    if not effects:
        return report
    if len(commands) == 1 or not culprits:
        if len(commands) == 1:
            outcomes[0].effects = effects
        else:
            report.unattributed = effects
        world.reset()
        return report
    explained: set[Effect] = set()
    for outcome in outcomes:
        if not outcome.ran:
            continue
        world.reset()
        *_, outcome.effects = run([outcome.command])
        explained.update(outcome.effects)
    report.unattributed = [e for e in effects if e not in explained]
    world.reset()
    return report


def run_before(
    world: World,
    *,
    sandbox: bool = True,
    trust: bool = False,
    prompt: str = "hi",
    extra_config: str = "",
) -> tuple[list[Effect], str]:
    """The before phase: open the world's workspace, as it is now (plant hostile config
    first: :data:`phases.HOSTILE`), with ``ketch -p`` and a model that only answers;
    nothing may run. Returns the effects (against the workspace as planted) and stderr."""
    world.rebase()
    texts, stderr = open_session(
        world, sandbox=sandbox, extra_config=extra_config, trust=trust, prompt=prompt
    )
    return world.check(texts), stderr


def run_before_shell(
    world: World, *, sandbox: bool = True, extra_config: str = "", trust: bool = False
) -> tuple[list[Effect], str]:
    """The before phase through the interactive shell (in tmux): open the world's
    workspace, wait for the first-run trust offer (it lists the items), decline it
    (``trust``: accept it all, the control), send a prompt, get the answer, quit.
    Returns the effects and the screen."""
    kit = str(Path(__file__).resolve().parents[1] / "interactive")
    if kit not in sys.path:
        sys.path.insert(0, kit)
    from interactive_kit import Terminal

    world.rebase()
    env = {**world.env(), **_ketch_dirs(world, _config(sandbox, False, extra_config))}
    scratch = world.root / "ketch" / "terminal"
    scratch.mkdir(parents=True, exist_ok=True)
    term = Terminal(
        scratch,
        workspace=world.workspace,
        home=world.root / "ketch",
        plugins=None,  # every bundled plugin
        script=[{"text": "FIRST-ANSWER"}],
        env=env,
    )
    try:
        offered = term.wait_for("item(s)?")
        term.keys("1" if trust else "3")  # Trust all of them / Not now
        if not trust:
            term.wait_for("nothing trusted")
        term.wait_idle()
        term.type("hello")
        term.wait_for("FIRST-ANSWER")
        term.wait_idle()
        term.type("/exit")
        code = term.exit_code()
        screen = term.screen()
        if code != 0 or "Traceback" in screen:
            raise RuntimeError(f"the shell ended with {code}: {screen[-1500:]}")
    finally:
        term.close()
    texts = [screen, offered, *(b.decode("utf-8", "replace") for b in _journal_bytes(env))]
    return world.check(texts), screen


def run_before_acp(
    world: World, *, sandbox: bool = True, extra_config: str = "", trust: bool = False
) -> tuple[list[Effect], str]:
    """The before phase through ``ketch acp`` and the ACP SDK's own client: a session in
    the world's workspace, two prompts, the model asking for ``git status`` once (the
    client rejects what asks). ``trust``: the person ran ``ketch trust --yes`` first
    (the control). Returns the effects and what the agent said."""
    from tests.acp.acp_kit import AcpEnv, RecordingClient, agent_stderr, run_prompts

    world.rebase()
    env = {**world.env(), **_ketch_dirs(world, _config(sandbox, False, extra_config))}
    acp = AcpEnv(workspace=world.workspace, scratch=world.root / "ketch" / "acp", env=env)
    acp.scratch.mkdir(parents=True, exist_ok=True)
    if trust:
        _person_trusts(env, world.workspace)
    acp.script(
        [
            {"tool_calls": [{"name": "shell", "input": {"command": "git status"}}]},
            {"text": "done"},
            {"text": "again"},
        ]
    )
    client = RecordingClient(choose=lambda call, options: "reject_once")
    reasons = run_prompts(acp, client, "hello", "again")
    if reasons != ["end_turn", "end_turn"]:
        raise RuntimeError(f"ketch acp did not answer: {reasons}: {agent_stderr(acp)[-1000:]}")
    said = "".join(getattr(getattr(u, "content", None), "text", "") or "" for u in client.updates)
    texts = [said, agent_stderr(acp), json.dumps(acp.requests())]
    texts += [b.decode("utf-8", "replace") for b in _journal_bytes(env)]
    return world.check(texts), said


def open_session(
    world: World,
    *,
    sandbox: bool = True,
    redact: bool = False,
    extra_config: str = "",
    trust: bool = False,
    prompt: str = "hi",
) -> tuple[list[str], str]:
    """A new ``ketch -p PROMPT`` session in the world (after ``ketch trust --yes`` with
    ``trust``), its model only answering: (everything it printed or stored, stderr)."""
    _, texts, _, stderr = _cli_once(
        world,
        [],
        profile="manual",
        sandbox=sandbox,
        redact=redact,
        extra_config=extra_config,
        trust=trust,
        prompt=prompt,
    )
    return texts, stderr


# --- the real loop, with a person who approves every question ------------------------------


def run_approved(
    world: World,
    commands: Sequence[Command],
    *,
    profile: str = "assisted",
    sandbox: bool = True,
    redact: bool = False,
    extra_config: str = "",
    culprits: bool = True,
    after: bool | Sequence[AfterStep] = False,
) -> Report:
    """Every command through the real turn loop in process (scripted model, every bundled
    plugin), with an approver that says yes, once, to every question -- the person who
    approves everything. Tests the sandbox as the last wall: whatever the engine asked
    about runs anyway, still sandboxed. Decisions report ``ask`` for approved calls.
    ``after`` as for :func:`run_cli` (its new sessions are ``ketch -p`` runs)."""
    return _run(
        _loop_once,
        world,
        commands,
        profile=profile,
        sandbox=sandbox,
        redact=redact,
        culprits=culprits,
        extra_config=extra_config,
        after=after,
    )


def _after(
    world: World,
    sandbox: bool,
    redact: bool,
    extra_config: str,
    after: bool | Sequence[AfterStep],
) -> Callable[[], list[Effect]] | None:
    """The after phase for a batch: its steps, with new sessions through ``ketch -p``."""
    steps = _steps(after)
    if not steps:
        return None

    def session(trust: bool, prompt: str = "hi") -> list[str]:
        return open_session(
            world,
            sandbox=sandbox,
            redact=redact,
            extra_config=extra_config,
            trust=trust,
            prompt=prompt,
        )[0]

    return lambda: after_phase(world, session, steps)


def _exit_in_process(kernel: Any) -> None:
    """What ketch's own exit does for an in-process kernel: the MCP plugin stops the
    servers it started at exit (``atexit``), not when a session ends (a kernel's next
    session keeps them), and this process goes on after the run."""
    try:
        from ketch_mcp.setup import state_of
    except ImportError:
        return
    runtime = state_of(kernel).runtime
    if runtime is not None:
        runtime.close()


def _loop_once(
    world: World,
    commands: Sequence[Command],
    *,
    profile: str,
    sandbox: bool,
    redact: bool,
    extra_config: str,
) -> tuple[list[Outcome], list[str], str, str]:
    from ketch.testing import Harness, approve_all

    ids = [f"call_{i}" for i in range(len(commands))]
    script: list[dict[str, Any]] = [
        {"tool_calls": [_call(c, i)]} for c, i in zip(commands, ids, strict=True)
    ]
    script.append({"text": "done"})
    env = world.env()
    with patched_environ(env):
        harness = Harness.create(
            world.root,
            script=script,
            config=_config(sandbox, redact, extra_config),
            settings={"profile": profile, "loop": {"max_iterations": len(commands) + 2}},
            env=env,
        )
        if sandbox and not harness.session.snapshot().facts.get("sandboxed"):
            raise RuntimeError(
                "the run asked for the sandbox, and this session is not sandboxed: "
                + "; ".join(n.message for n in harness.of_type("notice"))
            )
        harness.run("run the commands", approver=approve_all)
        harness.kernel.end(harness.session, "exit")
        _exit_in_process(harness.kernel)
    outcomes = {i: Outcome(command=c) for c, i in zip(commands, ids, strict=True)}
    for event in harness.events:
        outcome = outcomes.get(getattr(event, "tool_call_id", "") or "")
        if outcome is None:
            continue
        if event.type == "permission" and outcome.decision == "invalid":
            outcome.decision, outcome.reason = event.decision, event.reason
        elif event.type == "tool_result":
            outcome.output, outcome.ok = event.output, event.ok
            outcome.ran = event.outcome in ("succeeded", "failed")
    texts = [json.dumps([r.model_dump(mode="json") for r in harness.provider.requests])] + [
        o.output for o in outcomes.values()
    ]
    return [outcomes[i] for i in ids], texts, "", ""


# --- in process, for sweeps --------------------------------------------------------------------


class InProcess:
    """One kernel in ``world`` deciding and running commands one by one (see :func:`run_in_process`)."""

    def __init__(
        self,
        world: World,
        *,
        profile: str = "assisted",
        sandbox: bool = True,
        redact: bool = False,
        extra_config: str = "",
        trust: bool = False,
    ) -> None:
        from ketch.testing import Harness

        self.world = world
        self.profile = profile
        self.sandbox = sandbox
        self._env = world.env()
        if trust:  # as run_cli's: the person's ketch trust --yes, in the harness's dirs
            base = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
            _person_trusts({**base, **isolated_env(world.root), **self._env}, world.workspace)
        with patched_environ(self._env):
            # The harness's workspace is ROOT/ws: the world's own workspace.
            self.harness = Harness.create(
                world.root,
                config=_config(sandbox, redact, extra_config),
                settings={"profile": profile},
                env=self._env,
            )
            self.session = self.harness.session
        # ketch's own directories (its state: the store, the sandbox's ledger) are the
        # harness's, as in the CLI runs -- not the world's fake home.
        self._env.update(
            {k: v for k, v in self.harness.environ.items() if k.startswith(("KETCH_", "XDG_"))}
        )
        assert self.harness.workspace == world.workspace
        if sandbox and not self.session.snapshot().facts.get("sandboxed"):
            raise RuntimeError(
                "the run asked for the sandbox, and this session is not sandboxed: "
                + "; ".join(n.message for n in self.harness.of_type("notice"))
            )
        self.tool = self.harness.kernel.tools["shell"]
        self._count = 0

    async def _one(self, command: Command) -> Outcome:
        from pydantic import ValidationError

        from ketch.policy import ProposedCall, combine_votes
        from ketch.tools import ToolContext, ToolResult

        outcome = Outcome(command=command)
        kernel, session, tool = self.harness.kernel, self.session, self.tool
        self._count += 1
        call_id = f"call_{self._count}"
        try:
            args = tool.input_model.model_validate(_input(command))
        except ValidationError as exc:
            outcome.output = str(exc)
            return outcome

        async def no_one_approves(access: Any) -> bool:
            return False

        ctx = ToolContext(
            workspace=session.workspace,
            session_id=session.id,
            settings=kernel.settings,
            state=session.state,
            authorize=no_one_approves,
            tool_call_id=call_id,
        )
        snapshot = session.snapshot()
        try:
            accesses = tuple(tool.accesses(args, ctx))
        except Exception as exc:  # noqa: BLE001 - as the loop: a tool that cannot describe itself is refused
            outcome.output = f"accesses failed: {exc}"
            return outcome
        proposed = ProposedCall(
            id=call_id,
            tool=tool.name,
            input=args.model_dump(),
            effects=tool.effects,
            mutating=tool.mutating,
            accesses=accesses,
            plugin=tool.plugin,
            capabilities=tool.capabilities,
        )
        try:
            vote = combine_votes(kernel.hooks.policy_votes(proposed, snapshot, session))
        except Exception as exc:  # noqa: BLE001 - a raising voter denies
            outcome.decision, outcome.reason = "deny", f"a voter raised: {exc}"
            return outcome
        outcome.decision, outcome.reason = vote.decision, vote.reason
        if vote.decision != "allow":
            return outcome
        if any(
            v.denies for v in await kernel.hooks.before_tool_use(session, proposed, vote.decision)
        ):
            outcome.decision, outcome.reason = "deny", "blocked by a before-tool-use hook"
            return outcome
        result = await tool.run(args, ctx)
        if not isinstance(result, ToolResult):
            result = ToolResult.error("not a result")
        result = kernel.hooks.tool_result(session, proposed, result)
        outcome.ran, outcome.ok, outcome.output = True, result.ok, result.output
        return outcome

    def run(self, commands: Sequence[Command]) -> Report:
        outcomes: list[Outcome] = []
        with patched_environ(self._env):
            for command in commands:
                outcome = asyncio.run(self._one(command))
                if outcome.ran:
                    outcome.effects = self.world.check([outcome.output])
                    if outcome.effects:
                        self.world.reset()
                outcomes.append(outcome)
        return Report(self.profile, self.sandbox, outcomes)


def run_in_process(
    world: World,
    commands: Sequence[Command],
    *,
    profile: str = "assisted",
    sandbox: bool = True,
    redact: bool = False,
    extra_config: str = "",
    trust: bool = False,
) -> Report:
    """Decide each command through the kernel's votes; run what was allowed; check after
    each. ``trust`` as for :func:`run_cli`."""
    return InProcess(
        world,
        profile=profile,
        sandbox=sandbox,
        redact=redact,
        extra_config=extra_config,
        trust=trust,
    ).run(commands)
