"""The bubblewrap sandbox, run for real: commands go through the hook's argv with
subprocess. Skipped (with the reason) where bwrap is missing or cannot create
namespaces; .ci/run installs it. The end-to-end acceptance cases (canaries, the real
CLI) are in tests/security/test_sandbox_*.py."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import ketch_sandbox
from ketch.policy import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, text
from ketch_policy_kit.approvals import session_approvals
from ketch_sandbox.bwrap import probe
from ketch_sandbox.trees import forget
from ketch_tool_kit.sandbox import SANDBOXED, wrapper

PROBE = probe()


def sandboxed(session: Any) -> bool:
    """What the sandbox told this session's permission snapshot."""
    return session.snapshot().facts.get(SANDBOXED) is True


needs_bwrap = pytest.mark.skipif(
    not PROBE.available, reason=f"no working sandbox here: {PROBE.reason}"
)


def run(
    argv: list[str],
    workspace: Path,
    *,
    network: bool = False,
    cwd: Path | None = None,
    exposed: Any = None,
) -> subprocess.CompletedProcess[str]:
    reporters: list[Any] = []
    wrapped = ketch_sandbox.sandbox_command(
        argv=argv,
        workspace=workspace,
        network=network,
        exposed=exposed,
        reporters=reporters,
        context=None,
        kernel=None,
    )
    assert wrapped is not None and wrapped[-len(argv) :] == argv
    try:
        done = subprocess.run(
            wrapped, cwd=cwd or workspace, capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        notes = [n for n in (r(True) for r in reporters) if n]
    done.notes = notes  # type: ignore[attr-defined]
    return done


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".ketch").mkdir()
    (ws / "src").mkdir()
    yield ws
    forget(ws.resolve())


@pytest.fixture
def server() -> Iterator[str]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"reachable")

        def log_message(self, *args: object) -> None:
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
PYTHON = sys.executable  # its prefixes are visible in the sandbox, wherever the venv lives


def urllib_get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


@needs_bwrap
def test_network_is_off_and_the_hosts_is_never_shared(workspace: Path, server: str) -> None:
    """No network inside; and asking for it never shares the host's: without a call to
    ask through (no context), the command still has only its own loopback (the egress
    proxy, tested in test_sandbox_egress.py, is the one way out)."""
    assert urllib_get(server) == "reachable"  # the server is up, outside the sandbox
    blocked = run([PYTHON, "-c", FETCH, server], workspace)
    assert blocked.returncode != 0 and "reachable" not in blocked.stdout
    assert "URLError" in blocked.stderr  # it ran, and the network is what failed
    still = run([PYTHON, "-c", FETCH, server], workspace, network=True)
    assert still.returncode != 0 and "reachable" not in still.stdout
    port = server.rsplit(":", 1)[1].strip("/")
    dev_tcp = (
        f"exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
    )
    assert "reachable" not in run(["bash", "-c", dev_tcp], workspace).stdout
    assert "reachable" not in run(["bash", "-c", dev_tcp], workspace, network=True).stdout
    for tool in ("curl", "wget", "getent"):
        path = subprocess.run(
            ["sh", "-c", f"command -v {tool}"], capture_output=True, text=True
        ).stdout.strip()
        if path:
            args = {
                "curl": ["-sS", "-m", "5", server],
                "wget": ["-q", "-T", "5", "-O", "-", server],
                "getent": ["hosts", "example.com"],
            }[tool]
            assert run([path, *args], workspace).returncode != 0, tool


@needs_bwrap
def test_writes_inside_succeed_and_outside_fail(workspace: Path, tmp_path: Path) -> None:
    inside = run(["sh", "-c", "echo hi > src/made.txt && cat src/made.txt"], workspace)
    assert inside.returncode == 0 and inside.stdout.strip() == "hi"
    assert (workspace / "src" / "made.txt").read_text() == "hi\n"
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    target = outside_dir / "escaped.txt"
    escaped = run(["sh", "-c", f"echo x > {target}"], workspace)
    assert escaped.returncode != 0 and not target.exists()
    system = run(["sh", "-c", "echo x > /usr/ketch-sandbox-probe"], workspace)
    assert system.returncode != 0 and "Read-only file system" in system.stderr
    assert not Path("/usr/ketch-sandbox-probe").exists()


@needs_bwrap
def test_git_and_ketch_internals_are_read_only(workspace: Path) -> None:
    for target in (".git/hooks/pre-commit", ".git/config", ".ketch/config.toml"):
        result = run(["sh", "-c", f"echo evil > {target}"], workspace)
        assert result.returncode != 0, target
    assert not (workspace / ".git" / "hooks" / "pre-commit").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    readable = run(["cat", ".git/config"], workspace)
    assert readable.returncode == 0 and readable.stdout == "[core]\n"


@needs_bwrap
def test_private_tmp_no_new_privileges_and_cwd_kept(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "host-tmp-file").write_text("host")
    result = run(
        [
            "sh",
            "-c",
            f"pwd; ls {tmp_path}/host-tmp-file 2>&1; grep NoNewPrivs /proc/self/status; echo t > /tmp/scratch && cat /tmp/scratch",
        ],
        workspace,
        cwd=workspace / "src",
    )
    lines = result.stdout.splitlines()
    assert lines[0] == str(workspace / "src")
    assert "No such file" in lines[1]  # the host's /tmp is not visible
    assert lines[2].split() == ["NoNewPrivs:", "1"]
    assert lines[3] == "t"
    assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "t\n"


@needs_bwrap
def test_only_what_programs_need_is_visible(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """System dirs and toolchains read-only; no /run, /var, host HOME or runtime dir; the
    interpreter and git work; HOME is an empty private directory."""
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    (home / "notes" / "todo.txt").write_text("private notes")
    tool_root = tmp_path / "toolchain"
    (tool_root / "bin").mkdir(parents=True)
    (tool_root / "bin" / "mytool").write_text("#!/bin/sh\necho tool-ran\n")
    (tool_root / "bin" / "mytool").chmod(0o755)
    (tool_root / "lib").mkdir()
    (tool_root / "lib" / "data.txt").write_text("tool data")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("PATH", f"{tool_root / 'bin'}:{os.environ['PATH']}")
    script = (
        "ls /run /var/run 2>&1 | head -2; "
        f"cat {home}/notes/todo.txt 2>&1; ls -A $HOME; touch $HOME/scratch && echo home-writable; "
        f"ls {runtime} 2>&1; mytool; cat {tool_root}/lib/data.txt; "
        f"{PYTHON} -c 'import sys; print(\"python\", sys.version_info[0])'; git --version | cut -c1-11"
    )
    out = run(["bash", "-c", script], workspace).stdout
    assert "cannot access '/run'" in out and "cannot access '/var/run'" in out
    assert "private notes" not in out and "home-writable" in out
    assert f"cannot access '{runtime}'" in out
    assert "tool-ran" in out and "tool data" in out and "python 3" in out and "git version" in out
    assert not (home / "scratch").exists()


@needs_bwrap
def test_etc_shows_only_what_every_user_may_read(workspace: Path) -> None:
    shadow = Path("/etc/shadow")
    if not shadow.exists() or shadow.stat().st_mode & 0o004:
        pytest.skip("no private /etc/shadow here")
    result = run(["sh", "-c", "wc -c < /etc/shadow; grep -c . /etc/passwd"], workspace)
    size, passwd_lines = result.stdout.split()
    assert size == "0" and int(passwd_lines) > 0


@needs_bwrap
def test_a_socket_in_a_bound_tree_is_covered(workspace: Path, tmp_path: Path) -> None:
    """A host service listening on a socket inside the workspace (a dev server, git's
    fsmonitor) is not reachable: the socket is covered by an empty file."""
    path = workspace / "src" / "service.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen(1)
    listener.settimeout(2)
    try:
        probe_code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); s.sendall(b'leak')"
        result = run([PYTHON, "-c", probe_code], workspace)
        assert result.returncode != 0 and "ConnectionRefused" in result.stderr
        with pytest.raises(TimeoutError):
            listener.accept()
    finally:
        listener.close()


@needs_bwrap
def test_secrets_in_home_are_hidden_even_when_a_toolchain_holds_them(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    cargo = home / ".cargo"
    (cargo / "bin").mkdir(parents=True)
    (cargo / "credentials.toml").write_text("token = 'cargo-secret'")
    (cargo / "env").write_text("cargo env")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PATH", f"{cargo / 'bin'}:{os.environ['PATH']}")
    out = run(["sh", "-c", f"cat {cargo}/env; cat {cargo}/credentials.toml"], workspace).stdout
    assert "cargo env" in out and "cargo-secret" not in out


@needs_bwrap
def test_a_workspace_at_home_hides_key_directories_and_protects_startup_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    (home / ".bashrc").write_text("# mine\n")
    monkeypatch.setenv("HOME", str(home))
    try:
        result = run(
            ["sh", "-c", "cat .ssh/id_rsa; echo evil >> .bashrc; echo ok > note.txt && echo wrote"],
            home,
        )
        assert "PRIVATE KEY" not in result.stdout and "wrote" in result.stdout
        assert (home / ".bashrc").read_text() == "# mine\n" and (
            home / "note.txt"
        ).read_text() == "ok\n"
    finally:
        forget(home.resolve())


@needs_bwrap
def test_a_workspace_secret_is_masked_unless_exposed_and_the_command_is_told(
    workspace: Path,
) -> None:
    (workspace / ".env").write_text("API_KEY=hunter2\n")
    (workspace / "src" / "deploy.pem").write_text("-----BEGIN KEY-----")
    masked = run(["sh", "-c", "cat .env; ls src"], workspace)
    assert "hunter2" not in masked.stdout and "deploy.pem" in masked.stdout
    assert masked.notes == [
        "[sandbox] .env is masked in the sandbox (the command found it empty); allow reading it with read(.env), or approve a command that names it"
    ]
    listed = run(["sh", "-c", "ls -la; test -e .env && echo present"], workspace)
    assert (
        "present" in listed.stdout and listed.notes == []
    )  # named, never opened: nothing to report
    shown = run(["cat", ".env"], workspace, exposed=lambda p: p.name == ".env")
    assert shown.stdout == "API_KEY=hunter2\n" and shown.notes == []
    assert (workspace / ".env").read_text() == "API_KEY=hunter2\n"  # the mask never writes through


@needs_bwrap
def test_a_session_knows_it_is_sandboxed(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, bundled=["sandbox"])
    assert sandboxed(h.session)
    wrapped = wrapper(h.kernel)(["ls"], h.workspace, False)
    assert wrapped is not None and wrapped[0] == PROBE.path and wrapped[-2:] == ["--", "ls"]


def test_missing_bwrap_is_said_once_and_commands_run_unwrapped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert "not installed" in probe().reason
    h = Harness.create(tmp_path / "h", bundled=["sandbox"], env={"PATH": str(empty)})
    session = h.session
    notices = [e.message for e in h.of_type("notice") if e.message.startswith("sandbox:")]
    assert len(notices) == 1 and "bubblewrap (bwrap) is not installed" in notices[0]
    assert not sandboxed(session)
    assert wrapper(h.kernel)(["ls"], h.workspace, False) is None


@needs_bwrap
def test_a_view_bwrap_refuses_means_not_sandboxed_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """bwrap that works in general but fails on this workspace's view: the session is
    not sandboxed, one notice says why, and commands are not wrapped in a sandbox that
    would fail."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    broken = bin_dir / "bwrap"
    broken.write_text(
        f'#!/bin/sh\ncase "$*" in *"--bind {(tmp_path / "h" / "ws").resolve()}"*) echo \'bwrap: Can not mount tmpfs\' >&2; exit 1;; esac\nexec {PROBE.path} "$@"\n'
    )
    broken.chmod(0o755)
    assert probe(str(broken)).available
    path = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)  # the kernel probes the bwrap PATH names
    h = Harness.create(tmp_path / "h", bundled=["sandbox"], env={"PATH": path})
    assert not sandboxed(h.session)
    notices = [e.message for e in h.of_type("notice") if e.message.startswith("sandbox:")]
    assert len(notices) == 1 and "Can not mount tmpfs" in notices[0]
    assert wrapper(h.kernel)(["ls"], h.workspace, False) is None
    h.kernel.new_session(provider=h.provider)
    assert len([e for e in h.of_type("notice") if e.message.startswith("sandbox:")]) == 1


def test_the_sandbox_can_be_turned_off_by_the_user(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, bundled=["sandbox"], config="[sandbox]\nenabled = false\n")
    assert not sandboxed(h.session)
    assert wrapper(h.kernel)(["ls"], h.workspace, False) is None
    assert any("sandbox: off" in e.message for e in h.of_type("notice"))


def test_a_workspace_cannot_turn_the_sandbox_off_until_trusted(tmp_path: Path) -> None:
    h = Harness.create(
        tmp_path, bundled=["sandbox"], workspace_config="[sandbox]\nenabled = false\n"
    )
    _ = h.session
    assert ketch_sandbox.active(h.kernel) == PROBE.available  # the workspace's "off" is not applied
    assert sandboxed(h.session) == PROBE.available


def test_the_sandbox_setting_is_per_workspace_in_one_process(tmp_path: Path) -> None:
    """One process, two kernels (``ketch acp`` serves one per editor session): one
    workspace's user config turning the sandbox off does not turn it off for the other."""
    off = Harness.create(
        tmp_path / "off", bundled=["sandbox"], config="[sandbox]\nenabled = false\n"
    )
    on = Harness.create(tmp_path / "on", bundled=["sandbox"])
    _ = off.session, on.session
    assert not sandboxed(off.session) and not ketch_sandbox.active(off.kernel)
    assert sandboxed(on.session) == PROBE.available
    assert (wrapper(on.kernel)(["ls"], on.workspace, False) is not None) == PROBE.available


@needs_bwrap
def test_two_kernels_in_one_workspace_each_protect_what_their_own_hooks_run(
    tmp_path: Path,
) -> None:
    """One process, two kernels on one workspace: the script one kernel's configured
    hook runs is read-only in that kernel's sandbox, and only there (the view's cached
    plan is never reused for the other kernel's settings), however the calls alternate."""
    shared = tmp_path / "shared"
    (shared / "scripts").mkdir(parents=True)
    verify = shared / "scripts" / "verify.py"
    verify.write_text("print('ok')\n")
    kernels = {}
    for name, config in (
        ("hooked", '[[hooks.Stop]]\ncommand = "python3 scripts/verify.py"\n'),
        ("plain", ""),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "ws").symlink_to(shared)
        kernels[name] = Harness.create(
            tmp_path / name, bundled=["sandbox", "hooks"], config=config
        ).kernel

    def write(name: str, text: str) -> bool:
        argv = ketch_sandbox.wrap(
            ["sh", "-c", f"echo {text} > scripts/verify.py"],
            shared,
            network=False,
            kernel=kernels[name],
        )
        subprocess.run(argv, cwd=shared, capture_output=True, timeout=60, check=False)
        return verify.read_text() == f"{text}\n"

    assert not write("hooked", "a")
    assert write("plain", "b")
    assert not write("hooked", "c") and verify.read_text() == "b\n"


def test_no_bwrap_binary_at_the_given_path() -> None:
    missing = probe("/nonexistent/bwrap")
    assert not missing.available and "could not run" in missing.reason


@needs_bwrap
def test_the_command_line_builds_the_documented_view(workspace: Path) -> None:
    argv = ketch_sandbox.wrap(["make", "test"], workspace, network=False)
    joined = " ".join(argv)
    ws = workspace.resolve()
    assert "--ro-bind / /" not in joined  # never the whole host
    assert "--ro-bind /usr /usr" in joined and "--ro-bind /etc /etc" in joined
    assert (
        f"--bind {ws} {ws}" in joined
        and f"--ro-bind {ws}/.git {ws}/.git" in joined
        and f"--ro-bind {ws}/.ketch {ws}/.ketch" in joined
    )
    assert "--unshare-all" in argv and "--share-net" not in argv
    assert "--new-session" in argv and "--die-with-parent" in argv and "--cap-drop" in argv
    home = os.path.realpath(os.path.expanduser("~"))
    assert f"--tmpfs {home}" in joined  # HOME is an empty private directory
    bound = [argv[i + 1] for i, a in enumerate(argv) if a in ("--bind", "--ro-bind")]
    assert not any(p in ("/", "/run", "/var", "/var/run", "/home", "/tmp", home) for p in bound)
    assert argv[-3:] == ["--", "make", "test"]
    assert "--share-net" not in ketch_sandbox.wrap(["make"], workspace, network=True)


class Answer:
    """An approver that says yes, "for the session" (to every question, or only to
    those whose summary is in ``session``, "once" to the rest), and records the questions."""

    def __init__(self, session: tuple[str, ...] | None = None) -> None:
        self.session = session
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.requests.append(request)
        remember = "session" if self.session is None or request.summary in self.session else "once"
        return ApprovalAnswer(approved=True, remember=remember)


@needs_bwrap
def test_running_outside_the_sandbox_asks_every_time_with_the_reason(tmp_path: Path) -> None:
    """full-access would run `touch` without asking; outside the sandbox it asks, says
    why, and "for the session" remembers nothing: the same call asks again."""
    unsandboxed = {
        "command": "touch .git/made-outside",
        "dangerously_disable_sandbox": True,
        "reason": "git needs to write its index",
    }
    script = [
        call("shell", unsandboxed),
        call("shell", {**unsandboxed, "command": "touch .git/again"}),
        call("shell", {"command": "touch .git/inside"}),
        text("done"),
    ]
    h = Harness.create(
        tmp_path,
        script=script,
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "full-access"},
        config='[permissions]\nallow = ["shell"]\n',
    )
    (h.workspace / ".git").mkdir()
    answer = Answer()
    h.run("go", approver=answer)
    outside, again, inside = answer.requests
    for request in (outside, again):
        assert (
            "OUTSIDE the sandbox" in request.reason
            and "git needs to write its index" in request.reason
        )
        assert request.scope is None and "OUTSIDE THE SANDBOX" in request.summary
    assert "OUTSIDE" not in inside.reason  # the guards asked about .git; it runs sandboxed
    assert session_approvals(h.session) == []  # "for the session" kept nothing
    assert (h.workspace / ".git" / "made-outside").exists() and (
        h.workspace / ".git" / "again"
    ).exists()
    results = h.of_type("tool_result")
    assert (
        not results[2].ok and not (h.workspace / ".git" / "inside").exists()
    )  # approved, and still read-only in the sandbox


@needs_bwrap
def test_the_shell_tool_runs_through_policy_and_sandbox(tmp_path: Path) -> None:
    """End to end with the bundled shell tool: assisted + a working sandbox runs build
    tools without asking, inside the sandbox; what the guards or profile hold back asks
    (and nobody can approve here, so it does not run)."""
    probe_path = "/usr/ketch-sandbox-e2e"
    script = [
        call("shell", {"command": "ls"}),
        call("shell", {"command": "touch made.txt"}),
        call("shell", {"command": f"python3 -c \"open('{probe_path}', 'w')\""}),
        call("shell", {"command": "rm -rf src"}),
        call("shell", {"command": "echo evil > .git/config"}),
        text("done"),
    ]
    h = Harness.create(
        tmp_path,
        script=script,
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "assisted"},
    )
    if "shell" not in h.kernel.tools:
        pytest.skip("the shell tool is not available")
    (h.workspace / "src").mkdir()
    (h.workspace / ".git").mkdir()
    (h.workspace / ".git" / "config").write_text("[core]\n")
    h.run("go")
    assert sandboxed(h.session)
    outcomes = [(r.ok, r.outcome) for r in h.of_type("tool_result")]
    assert outcomes[0] == (True, "succeeded")
    assert outcomes[1] == (True, "succeeded") and (h.workspace / "made.txt").exists()
    assert (
        outcomes[2][1] in ("failed", "refused") and not Path(probe_path).exists()
    )  # stopped by the sandbox or never run
    assert outcomes[3] == (False, "refused") and (h.workspace / "src").exists()
    assert (
        outcomes[4] == (False, "refused")
        and (h.workspace / ".git" / "config").read_text() == "[core]\n"
    )


@needs_bwrap
def test_a_secret_approved_for_the_session_is_shown_and_a_job_is_told_what_it_met(
    tmp_path: Path,
) -> None:
    """Before: a background job approved once, whose command does not name ``.env``,
    finds it masked, and the note comes with what shell_job reads. Then an approval
    remembered for the session (``read(.env)``) shows the secret to later commands that
    do not name it either."""
    disguised = "cat .[e]nv"
    script = [
        call("shell", {"command": f"sleep 0.3; {disguised}; sleep 30", "background": True}),
        call("shell_job", {"action": "read", "job_id": 1, "wait": 3}),
        call("shell", {"command": "cat .env"}),  # asks (a secret), approved for the session
        call("shell", {"command": disguised}),
        text("done"),
    ]
    h = Harness.create(
        tmp_path,
        script=script,
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "full-access", "tools": {"shell": {"job_start_wait": 0}}},
        config='[permissions]\nallow = ["shell"]\n',
    )
    (h.workspace / ".env").write_text("API_KEY=hunter2\n")
    answer = Answer(session=("cat .env",))
    h.run("go", approver=answer)
    started, read, named, later = (e.output for e in h.of_type("tool_result"))
    assert "hunter2" not in started + read and "[sandbox] .env is masked in the sandbox" in read
    assert "read(.env)" in session_approvals(h.session)
    assert "hunter2" in named and "hunter2" in later and "masked" not in later
    h.kernel.end(h.session, "exit")


@needs_bwrap
def test_each_file_of_a_secret_directory_is_masked_on_its_own(workspace: Path) -> None:
    """Every file under a workspace ``.aws`` (``.ssh``, ...) is a secret; allowing one
    shows that one only, and a file appearing later is masked too."""
    (workspace / ".aws").mkdir()
    (workspace / ".aws" / "credentials").write_text("aws_secret_access_key = hunter2\n")
    (workspace / ".aws" / "config").write_text("[default]\nregion = eu-west-1\n")
    shown = run(
        ["sh", "-c", "cat .aws/config .aws/credentials"],
        workspace,
        exposed=lambda p: p.name == "config",
    )
    assert "region = eu-west-1" in shown.stdout and "hunter2" not in shown.stdout
    assert shown.notes == [
        "[sandbox] .aws/credentials is masked in the sandbox (the command found it empty); allow reading it with read(.aws/credentials), or approve a command that names it"
    ]
    (workspace / ".aws" / "sso").mkdir()
    (workspace / ".aws" / "sso" / "token.json").write_text('{"accessToken": "sso-secret"}')
    later = run(["cat", ".aws/sso/token.json"], workspace)
    assert "sso-secret" not in later.stdout and len(later.notes) == 1
