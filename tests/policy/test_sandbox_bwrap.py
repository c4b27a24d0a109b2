"""The bubblewrap sandbox, run for real: commands go through the hook's argv with
subprocess. Skipped (with the reason) where bwrap is missing or cannot create
namespaces; .ci/run installs it."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import ketch_sandbox
from ketch.testing import Harness
from ketch_sandbox.bwrap import probe, wrap

PROBE = probe()
needs_bwrap = pytest.mark.skipif(not PROBE.available, reason=f"no working sandbox here: {PROBE.reason}")


def run(argv: list[str], workspace: Path, *, network: bool = False, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    wrapped = ketch_sandbox.ketch_sandbox_command(argv=argv, workspace=workspace, network=network)
    assert wrapped is not None and wrapped[-len(argv):] == argv
    return subprocess.run(wrapped, cwd=cwd or workspace, capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    saved = dict(ketch_sandbox._state)
    ketch_sandbox._state.update(probe=None, enabled=True)
    yield
    ketch_sandbox._state.clear()
    ketch_sandbox._state.update(saved)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "config").write_text("[core]\n")
    (ws / ".ketch").mkdir()
    (ws / "src").mkdir()
    return ws


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
# The interpreter itself, not a venv's symlink to it: the sandbox has a private /tmp,
# and a venv (CI's clone) may live there. FETCH needs only the standard library.
PYTHON = os.path.realpath(sys.executable)


@needs_bwrap
def test_network_is_off_unless_allowed(workspace: Path, server: str) -> None:
    assert urllib_get(server) == "reachable"  # the server is up, outside the sandbox
    blocked = run([PYTHON, "-c", FETCH, server], workspace)
    assert blocked.returncode != 0 and "reachable" not in blocked.stdout
    assert "URLError" in blocked.stderr  # it ran, and the network is what failed
    allowed = run([PYTHON, "-c", FETCH, server], workspace, network=True)
    assert allowed.returncode == 0 and allowed.stdout.strip() == "reachable"
    port = server.rsplit(":", 1)[1].strip("/")
    dev_tcp = f"exec 3<>/dev/tcp/127.0.0.1/{port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3"
    assert "reachable" not in run(["bash", "-c", dev_tcp], workspace).stdout
    assert "reachable" in run(["bash", "-c", dev_tcp], workspace, network=True).stdout
    for tool in ("curl", "wget", "getent"):
        path = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if path:
            args = {"curl": ["-sS", "-m", "5", server], "wget": ["-q", "-T", "5", "-O", "-", server], "getent": ["hosts", "example.com"]}[tool]
            assert run([path, *args], workspace).returncode != 0, tool


def urllib_get(url: str) -> str:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as response:
        return str(response.read().decode())


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
    home = run(["sh", "-c", f"echo x > {Path.home()}/.ketch-sandbox-probe"], workspace)
    assert home.returncode != 0 and not (Path.home() / ".ketch-sandbox-probe").exists()


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
    result = run(["sh", "-c", f"pwd; ls {tmp_path}/host-tmp-file 2>&1; grep NoNewPrivs /proc/self/status; echo t > /tmp/scratch && cat /tmp/scratch"], workspace, cwd=workspace / "src")
    lines = result.stdout.splitlines()
    assert lines[0] == str(workspace / "src")
    assert "No such file" in lines[1]  # the host's /tmp is not visible
    assert lines[2].split() == ["NoNewPrivs:", "1"]
    assert lines[3] == "t"
    assert not Path("/tmp/scratch").exists() or Path("/tmp/scratch").read_text() != "t\n"


@needs_bwrap
def test_secrets_in_home_and_the_session_bus_are_hidden(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("PRIVATE KEY")
    (home / ".netrc").write_text("machine x password hunter2")
    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "bus").write_text("socket stand-in")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", f"unix:path={runtime}/bus")
    result = run(["sh", "-c", f"cat {home}/.ssh/id_ed25519; cat {home}/.netrc; cat {runtime}/bus; echo \"bus=$DBUS_SESSION_BUS_ADDRESS\""], workspace)
    assert "PRIVATE KEY" not in result.stdout and "hunter2" not in result.stdout and "stand-in" not in result.stdout
    assert "bus=\n" in result.stdout or result.stdout.endswith("bus=\n")


@needs_bwrap
def test_a_workspace_at_home_still_hides_the_key_directories(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("PRIVATE KEY")
    argv = wrap(["cat", str(home / ".ssh" / "id_rsa")], home, network=False, bwrap=PROBE.path, home=home)
    result = subprocess.run(argv, cwd=home, capture_output=True, text=True, timeout=60, check=False)
    assert "PRIVATE KEY" not in result.stdout
    writable = subprocess.run(wrap(["sh", "-c", "echo ok > note.txt"], home, network=False, bwrap=PROBE.path, home=home), cwd=home, capture_output=True, text=True, timeout=60, check=False)
    assert writable.returncode == 0 and (home / "note.txt").read_text() == "ok\n"


@needs_bwrap
def test_a_session_knows_it_is_sandboxed(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, bundled=["sandbox"])
    assert h.session.sandboxed
    assert h.session.snapshot().sandboxed
    wrapped = h.kernel.hooks.sandbox_command(["ls"], h.workspace, False)
    assert wrapped is not None and wrapped[0] == PROBE.path and wrapped[-2:] == ["--", "ls"]


def test_missing_bwrap_is_said_once_and_commands_run_unwrapped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert "not installed" in probe().reason
    h = Harness.create(tmp_path / "h", bundled=["sandbox"], env={"PATH": str(empty)})
    session = h.session
    notices = [e.message for e in h.of_type("notice") if e.message.startswith("sandbox:")]
    assert len(notices) == 1 and "bubblewrap (bwrap) is not installed" in notices[0]
    assert not session.sandboxed
    assert h.kernel.hooks.sandbox_command(["ls"], h.workspace, False) is None


def test_the_sandbox_can_be_turned_off_by_the_user(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, bundled=["sandbox"], config="[sandbox]\nenabled = false\n")
    assert not h.session.sandboxed
    assert h.kernel.hooks.sandbox_command(["ls"], h.workspace, False) is None
    assert any("sandbox: off" in e.message for e in h.of_type("notice"))


def test_a_workspace_cannot_turn_the_sandbox_off_until_trusted(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, bundled=["sandbox"], workspace_config="[sandbox]\nenabled = false\n")
    _ = h.session
    assert ketch_sandbox._state["enabled"] is True
    assert h.session.sandboxed == PROBE.available


def test_no_bwrap_binary_at_the_given_path() -> None:
    missing = probe("/nonexistent/bwrap")
    assert not missing.available and "could not run" in missing.reason


def test_wrap_builds_the_documented_command_line(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    argv = wrap(["make", "test"], ws, network=False, home=tmp_path / "nohome")
    joined = " ".join(argv)
    assert argv[:5] == ["bwrap", "--ro-bind", "/", "/", "--dev"]
    assert f"--bind {ws} {ws}" in joined and f"--ro-bind {ws}/.git {ws}/.git" in joined
    assert "--unshare-all" in argv and "--share-net" not in argv
    assert "--new-session" in argv and "--die-with-parent" in argv and "--cap-drop" in argv
    assert argv[-3:] == ["--", "make", "test"]
    assert "--share-net" in wrap(["make"], ws, network=True)


@needs_bwrap
def test_the_shell_tool_runs_through_policy_and_sandbox(tmp_path: Path) -> None:
    """End to end with the bundled shell tool: assisted + a working sandbox runs build
    tools without asking, inside the sandbox; what the guards or profile hold back asks
    (and nobody can approve here, so it does not run)."""
    from ketch.testing import call, text

    probe_path = "/usr/ketch-sandbox-e2e"
    script = [
        call("shell", {"command": "ls"}),
        call("shell", {"command": "touch made.txt"}),
        call("shell", {"command": f"python3 -c \"open('{probe_path}', 'w')\""}),
        call("shell", {"command": "rm -rf src"}),
        call("shell", {"command": "echo evil > .git/config"}),
        text("done"),
    ]
    h = Harness.create(tmp_path, script=script, bundled=["policy", "shell", "sandbox"], settings={"profile": "assisted"})
    if "shell" not in h.kernel.tools:
        pytest.skip("the shell tool is not available")
    (h.workspace / "src").mkdir()
    (h.workspace / ".git").mkdir()
    (h.workspace / ".git" / "config").write_text("[core]\n")
    h.run("go")
    assert h.session.sandboxed
    outcomes = [(r.ok, r.outcome) for r in h.of_type("tool_result")]
    assert outcomes[0] == (True, "succeeded")
    assert outcomes[1] == (True, "succeeded") and (h.workspace / "made.txt").exists()
    assert outcomes[2][1] == "failed" and not Path(probe_path).exists()  # ran, and the sandbox stopped it
    assert outcomes[3] == (False, "refused") and (h.workspace / "src").exists()
    assert outcomes[4] == (False, "refused") and (h.workspace / ".git" / "config").read_text() == "[core]\n"
