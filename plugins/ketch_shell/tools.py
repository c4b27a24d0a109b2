"""``shell`` and ``shell_job``: run commands in the workspace, in the foreground or as jobs."""

from __future__ import annotations

import asyncio
import os
import shutil
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ketch.api import Access, Effect, ToolContext, ToolResult
from ketch_shell.capture import HeadTail, render
from ketch_shell.env import FIXED, child_env
from ketch_shell.exposure import exposure
from ketch_shell.jobs import JOBS, Job, Reporter
from ketch_shell.live import LiveLines, TeeHeadTail
from ketch_shell.process import reaped, run_foreground
from ketch_tool_kit.base import CompactSchema
from ketch_tool_kit.caps import notice, tool_settings
from ketch_tool_kit.paths import check_path_text, display, is_within, resolve, workspace_root
from ketch_tool_kit.sandbox import RUNS_SANDBOXED, SandboxCommand


class ShellSettings(BaseModel):
    """``[tools.shell]``: budgets only (a workspace config may set these)."""

    timeout: float = Field(120.0, gt=0)  # default per command
    max_timeout: float = Field(600.0, gt=0, le=24 * 3600)
    max_output_chars: int = Field(10_000, ge=500, le=10_000_000)
    max_output_lines: int = Field(250, ge=10, le=1_000_000)
    kill_grace: float = Field(2.0, ge=0, le=60)
    max_jobs: int = Field(8, ge=1, le=100)
    job_buffer_bytes: int = Field(1 << 20, ge=1 << 12)
    job_start_wait: float = Field(1.0, ge=0, le=30)


def authority(ctx: ToolContext) -> tuple[list[str], bool]:
    """``[shell] env_allow`` (and its older name ``env_passthrough``) and ``[shell]
    network``: user config (or a trusted workspace) only."""
    settings = ctx.settings
    section = settings.section("shell") if hasattr(settings, "section") else {}
    passthrough: list[object] = []
    for key in ("env_allow", "env_passthrough"):
        value = section.get(key) or []
        passthrough += value if isinstance(value, list) else []
    misplaced = (getattr(settings, "tools", None) or {}).get("shell") or {}
    for key in ("env_allow", "env_passthrough", "network"):
        if isinstance(misplaced, dict) and key in misplaced:
            notice(
                ctx,
                f"[tools.shell] {key} is ignored: set it under [shell] in your user config (a repository's own config may set [tools.*], so nothing there can grant access)",
            )
    return [str(p) for p in passthrough], bool(section.get("network", False))


def _command(value: str) -> str:
    if "\x00" in value:
        raise ValueError("the command contains a NUL byte")
    if not value.strip():
        raise ValueError("the command is empty")
    return value


class ShellInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    command: str = Field(
        max_length=100_000,
        description="The command line, run with bash -c in the workspace (or in cwd).",
    )
    timeout: float = Field(
        0,
        ge=0,
        description="Seconds before the command is stopped; 0 means the default (120 unless configured). Ignored with background.",
    )
    cwd: str = Field(
        "",
        description="Directory to run in, relative to the workspace root (must be inside it). Default: the workspace root.",
    )
    background: bool = Field(
        False,
        description="Start a long-running process (server, watcher) as a job and return at once; read its output and stop it with shell_job.",
    )
    network: bool = Field(
        False,
        description="The command needs the network (installing packages, fetching). It then reaches the network through ketch's egress proxy (HTTP_PROXY/HTTPS_PROXY/ALL_PROXY are set; there is no DNS in the sandbox): hosts the user's rules allow directly, others only if the user approves them. Without it the sandbox has no network.",
    )
    dangerously_disable_sandbox: bool = Field(
        False,
        description="Run outside the sandbox, with all of the user's access. Only when the sandbox is what makes the command fail (e.g. it must write .git or read a masked secret): the user is asked every time.",
    )
    reason: str = Field(
        "",
        max_length=1000,
        description="With network or dangerously_disable_sandbox: why this command needs it, shown to the user.",
    )

    @field_validator("command")
    @classmethod
    def _check_command(cls, value: str) -> str:
        return _command(value)

    @field_validator("cwd")
    @classmethod
    def _check_cwd(cls, value: str) -> str:
        return check_path_text(value) if value else value


def _shell() -> str:
    return shutil.which("bash") or "/bin/sh"


def _exit_note(code: int | None) -> str:
    if code is None:
        return ""
    if code < 0:
        import signal

        try:
            return f"[killed by {signal.Signals(-code).name}]"
        except ValueError:
            return f"[killed by signal {-code}]"
    return f"[exit code {code}]"


class Shell(CompactSchema[ShellInput]):
    name = "shell"
    description = (
        "Run a shell command (bash -c) in the workspace and return its output (stdout and stderr together) "
        "and exit code. Long output keeps its start and end. It is stopped after the timeout, with "
        "everything it started. Nothing can be typed into it (stdin is empty). For servers and watchers, "
        "set background=true and use shell_job. It runs in a sandbox: the workspace is writable except .git; "
        "secrets (.env, keys) read as empty; no network unless network=true (then through ketch's egress proxy, host by host); nothing outside the workspace "
        "but system and toolchain directories (read-only) and a private /tmp. Only the environment "
        "variables builds need are passed on (PATH, HOME, LANG, toolchain homes...)."
    )
    input_model = ShellInput
    effects = frozenset({Effect.EXECUTE})
    mutating = True
    capabilities = frozenset({RUNS_SANDBOXED})

    def __init__(self, sandbox: SandboxCommand | None = None) -> None:
        # The one hook this tool calls, as a narrow callable (None: no sandbox is asked).
        self.sandbox = sandbox

    def _cwd(self, args: ShellInput, ctx: ToolContext) -> str:
        return str(resolve(ctx.workspace, args.cwd or "."))

    def accesses(self, args: ShellInput, ctx: ToolContext) -> list[Access]:
        _, granted = authority(ctx)
        detail: dict[str, Any] = {
            "cwd": self._cwd(args, ctx),
            "network": granted or args.network,
            "env": {"GIT_OPTIONAL_LOCKS": FIXED["GIT_OPTIONAL_LOCKS"]},
        }
        if args.network and not granted:
            detail["network_approval"] = True  # asked for by the model, not granted by config
        if args.dangerously_disable_sandbox:
            detail["sandboxed"] = False  # the sandbox asks, every time
        if args.reason and (args.network or args.dangerously_disable_sandbox):
            detail["reason"] = args.reason
        if args.background:
            detail["background"] = True
        return [Access(effect=Effect.EXECUTE, target=args.command, detail=detail)]

    def summary(self, args: ShellInput) -> str:
        # The full command line, always: the user approves exactly what runs.
        extras = [f"in {args.cwd}"] if args.cwd else []
        if args.background:
            extras.append("background job")
        if args.network:
            extras.append("with network")
        if args.dangerously_disable_sandbox:
            extras.append("OUTSIDE THE SANDBOX")
        return args.command + (f"   [{', '.join(extras)}]" if extras else "")

    async def preview(self, args: ShellInput, ctx: ToolContext) -> str | None:
        """The full command line, where it runs, and whether the sandbox wraps it (the
        same sandbox hook ``run`` calls; asking it starts nothing)."""
        _, granted = authority(ctx)
        network = granted or args.network
        cwd = self._cwd(args, ctx)
        where = (
            display(resolve(ctx.workspace, cwd), ctx.workspace)
            if args.cwd
            else "the workspace root"
        )
        sandbox_command = self.sandbox
        if args.dangerously_disable_sandbox:
            sandbox = "OUTSIDE THE SANDBOX: it runs with your full access (secrets, every file, the network)"
        else:
            held: list[Reporter] = []  # the preview runs nothing: its masks are let go at once
            try:
                wrapped = (
                    sandbox_command(
                        [_shell(), "-c", args.command],
                        workspace_root(ctx.workspace),
                        network,
                        reporters=held,
                    )
                    if sandbox_command is not None
                    else None
                )
                for reporter in held:
                    reporter(True)
            except Exception as exc:  # noqa: BLE001 - run() refuses in this case too
                sandbox = f"sandbox failed ({type(exc).__name__}); it will not run"
            else:
                sandbox = (
                    ("sandboxed" + (" with network" if network else ", no network"))
                    if wrapped
                    else "NOT sandboxed: it runs with your full access"
                )
        lines = [f"$ {args.command}", f"in {where} ({cwd})", sandbox]
        if args.background:
            lines.append("as a background job")
        return "\n".join(lines)

    def prepare(
        self, args: ShellInput, ctx: ToolContext, reporters: list[Reporter]
    ) -> tuple[list[str], str, dict[str, str]] | ToolResult:
        cwd = self._cwd(args, ctx)
        root = workspace_root(ctx.workspace)
        if not is_within(resolve(ctx.workspace, cwd), root):
            return ToolResult.error(
                f"cwd {args.cwd!r} is outside the workspace ({root}); commands start inside it. "
                "If you really need another directory, `cd` to it in the command itself (the user sees that)."
            )
        if not os.path.isdir(cwd):
            return ToolResult.error(
                f"cwd {display(resolve(ctx.workspace, cwd), ctx.workspace)} is not a directory."
            )
        passthrough, granted = authority(ctx)
        argv = [_shell(), "-c", args.command]
        wrapped: list[str] | None = None
        if self.sandbox is not None and not args.dangerously_disable_sandbox:
            # A sandbox plugin that raises means "not run", never "run it unsandboxed".
            try:
                wrapped = self.sandbox(
                    argv,
                    root,
                    granted or args.network,
                    exposure(ctx, args.command),
                    reporters,
                    context=ctx,
                )
            except Exception as exc:  # noqa: BLE001
                for reporter in reporters:
                    reporter(True)
                return ToolResult.error(
                    f"[ketch] {getattr(exc, 'message', None) or f'The sandbox failed ({type(exc).__name__}: {exc})'}; the command was not run."
                )
        # Outside a sandbox, the reaper ends the command's group if ketch dies.
        argv = list(wrapped) if wrapped else reaped(argv)
        return argv, cwd, child_env(os.environ, allow=passthrough, cwd=cwd)

    async def run(self, args: ShellInput, ctx: ToolContext) -> ToolResult:
        cfg = tool_settings(ctx, "shell", ShellSettings)
        reporters: list[Reporter] = []
        prepared = self.prepare(args, ctx, reporters)
        if isinstance(prepared, ToolResult):
            return prepared
        argv, cwd, env = prepared
        if args.background:
            return await self._background(args, ctx, cfg, argv, cwd, env, reporters)
        timeout = min(args.timeout or cfg.timeout, cfg.max_timeout)
        half = cfg.max_output_chars // 2
        buffer = TeeHeadTail(half, cfg.max_output_chars - half)
        buffer.live = live = LiveLines(ctx.output)  # what it prints, shown as it prints it
        live.start()
        try:
            outcome = await run_foreground(
                argv,
                cwd=cwd,
                env=env,
                timeout=timeout,
                buffer=buffer,
                grace=cfg.kill_grace,
                owner=ctx.session_id,
            )
        except OSError as exc:
            return ToolResult.error(f"could not start the command: {exc.strerror or exc}")
        finally:
            met = [n for n in (reporter(True) for reporter in reporters) if n]
            await live.stop()
        text = render(outcome.output, max_lines=cfg.max_output_lines).rstrip("\n")
        notes: list[str] = []
        if outcome.timed_out:
            notes.append(
                f"[timed out after {timeout:g} s: the command and everything it started were stopped. For servers and watchers use background=true]"
            )
        else:
            notes.append(_exit_note(outcome.exit_code))
        if args.timeout > cfg.max_timeout:
            notes.append(
                f"[the timeout was capped at {cfg.max_timeout:g} s ([tools.shell] max_timeout)]"
            )
        if outcome.leftovers:
            notes.append(
                "[the command left processes running; they were stopped. Use background=true for long-running processes]"
            )
        notes += met
        body = text if text else "(no output)"
        ok = not outcome.timed_out and outcome.exit_code == 0
        return ToolResult(
            ok=ok,
            output=body + "\n" + "\n".join(n for n in notes if n),
            data={"exit_code": outcome.exit_code, "timed_out": outcome.timed_out},
        )

    async def _background(
        self,
        args: ShellInput,
        ctx: ToolContext,
        cfg: ShellSettings,
        argv: list[str],
        cwd: str,
        env: dict[str, str],
        reporters: list[Reporter],
    ) -> ToolResult:
        if JOBS.running(ctx.session_id) >= cfg.max_jobs:
            for reporter in reporters:
                reporter(True)
            return ToolResult.error(
                f"{cfg.max_jobs} background jobs are already running; stop one with shell_job first."
            )
        try:
            job = JOBS.start(
                ctx.session_id,
                args.command,
                argv,
                cwd=cwd,
                env=env,
                cap=cfg.job_buffer_bytes,
                reporters=reporters,
            )
        except OSError as exc:
            for reporter in reporters:
                reporter(True)
            return ToolResult.error(f"could not start the command: {exc.strerror or exc}")
        if cfg.job_start_wait:
            await asyncio.to_thread(_settle, job, cfg.job_start_wait)
        data, dropped = job.take()
        first = _job_output(data, dropped, cfg, job.notes())
        return ToolResult.success(
            f"Started job {job.id} (process group {job.pgid}): {args.command}\nstatus: {job.status()}\n"
            + (f"output so far:\n{first}\n" if first else "no output yet\n")
            + f"Read new output with shell_job(action='read', job_id={job.id}); stop it with action='stop'.",
            data={"job_id": job.id},
        )


def _settle(job: Job, seconds: float) -> None:
    """Wait until the job exits or ``seconds`` pass (to report early output or a crash)."""
    import time

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and job.running:
        time.sleep(0.05)


def _job_output(
    data: bytes, dropped: int, cfg: ShellSettings, notes: list[str] | None = None
) -> str:
    half = cfg.max_output_chars // 2
    buffer = HeadTail(half, cfg.max_output_chars - half)
    buffer.add(data)
    text = render(buffer, max_lines=cfg.max_output_lines).rstrip("\n")
    if dropped:
        text = f"[{dropped:,} older bytes were dropped unread]\n" + text
    if notes:
        text = "\n".join([text, *notes]) if text else "\n".join(notes)
    return text


class ShellJobInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["read", "stop", "list"] = Field(
        "read",
        description="read: new output since the last read; stop: stop the job; list: every job and its status.",
    )
    job_id: int = Field(0, ge=0, description="The job number shell returned (not needed for list).")
    wait: float = Field(
        0, ge=0, le=60, description="For read: seconds to wait for new output if there is none yet."
    )


class ShellJob(CompactSchema[ShellJobInput]):
    name = "shell_job"
    description = "Manage background jobs started with shell(background=true): read their new output, stop them, or list them."
    input_model = ShellJobInput
    # Only this session's own, already-approved jobs: nothing new is run or touched.
    effects: ClassVar[frozenset[Effect]] = frozenset()
    mutating = False
    repeatable = True  # reading a job's new output twice can rightly differ

    def summary(self, args: ShellJobInput) -> str:
        return "list jobs" if args.action == "list" else f"{args.action} job {args.job_id}"

    async def run(self, args: ShellJobInput, ctx: ToolContext) -> ToolResult:
        cfg = tool_settings(ctx, "shell", ShellSettings)
        if args.action == "list":
            jobs = JOBS.of(ctx.session_id)
            if not jobs:
                return ToolResult.success("No background jobs in this session.")
            return ToolResult.success(
                "\n".join(f"job {j.id}: {j.status()}: {j.command}" for j in jobs)
            )
        job = JOBS.get(ctx.session_id, args.job_id)
        if job is None:
            known = ", ".join(str(j.id) for j in JOBS.of(ctx.session_id)) or "none"
            return ToolResult.error(
                f"There is no job {args.job_id} in this session (jobs: {known})."
            )
        if args.action == "stop":
            was_running = job.running
            await asyncio.to_thread(job.stop, cfg.kill_grace)
            data, dropped = job.take()
            rest = _job_output(data, dropped, cfg, job.notes())
            head = (
                f"Stopped job {job.id}."
                if was_running
                else f"Job {job.id} had already ended ({job.status()})."
            )
            return ToolResult.success(head + (f"\nlast output:\n{rest}" if rest else ""))
        data, dropped = await asyncio.to_thread(job.take, args.wait)
        text = _job_output(data, dropped, cfg, job.notes())
        return ToolResult.success(
            f"job {job.id}: {job.status()}\n" + (text if text else "(no new output)")
        )
