"""The egress proxy end to end: pip through it, the real ``ketch`` command, the journal.

The package index: PyPI itself where this machine reaches it (the test says so when it
does not, and skips that case), and always a PEP 503 index this test serves on
127.0.0.2 from a wheel it builds -- the "registry" named in the rules, a local one, so
it needs a ``local`` rule as a company registry would.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import Harness, call, text
from ketch_sandbox.bwrap import probe
from tests.store.conftest import cli_env, run_ketch

PROBE = probe()
pytestmark = pytest.mark.skipif(
    not PROBE.available, reason=f"no working sandbox here: {PROBE.reason}"
)
PACKAGE = "ketchdemo"


def _wheel(directory: Path) -> Path:
    """A real, installable wheel of a one-module package."""
    name = f"{PACKAGE}-1.0-py3-none-any.whl"
    files = {
        f"{PACKAGE}.py": b"ANSWER = 42\n",
        f"{PACKAGE}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {PACKAGE}\nVersion: 1.0\n".encode(),
        f"{PACKAGE}-1.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: ketch-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = ""
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\n"
    record += f"{PACKAGE}-1.0.dist-info/RECORD,,\n"
    wheel = directory / name
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
        archive.writestr(f"{PACKAGE}-1.0.dist-info/RECORD", record)
    return wheel


@pytest.fixture
def registry(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A PEP 503 simple index on 127.0.0.2 (counting requests)."""
    wheel = _wheel(tmp_path)
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            seen.append(self.path)
            if self.path.rstrip("/") == f"/simple/{PACKAGE}":
                body = f'<a href="/files/{wheel.name}#sha256={digest}">{wheel.name}</a>'.encode()
                kind = "text/html"
            elif self.path == f"/files/{wheel.name}":
                body, kind = wheel.read_bytes(), "application/octet-stream"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = socketserver.ThreadingTCPServer(("127.0.0.2", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    yield {"url": f"http://127.0.0.2:{port}/simple", "host": f"127.0.0.2:{port}", "seen": seen}
    server.shutdown()
    server.server_close()


def _reaches(host: str, port: int = 443) -> bool:
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError:
        return False
    return True


PIP = f"{sys.executable} -m pip"
PIP_QUIET = "--disable-pip-version-check --no-cache-dir --no-input"


def _pip_harness(tmp_path: Path, command: str, network: str) -> Harness:
    return Harness.create(
        tmp_path,
        script=[call("shell", {"command": command, "network": True}), text("done")],
        bundled=["policy", "shell", "sandbox"],
        settings={"profile": "assisted"},
        config=f'[permissions]\nallow = ["shell"]\n[sandbox.network]\n{network}\n',
    )


def _run(h: Harness) -> str:
    try:
        h.run("go")
        return str(h.of_type("tool_result")[0].output)
    finally:
        h.kernel.end(h.session, "exit")


@pytest.mark.parametrize("allowed", [True, False])
def test_pip_download_from_the_real_index_through_the_proxy(tmp_path: Path, allowed: bool) -> None:
    if not _reaches("pypi.org"):
        pytest.skip("this machine does not reach pypi.org (the local-index cases cover it)")
    rules = 'allow = ["pypi.org", "files.pythonhosted.org"]' if allowed else "allow = []"
    command = (
        f"{PIP} download {PIP_QUIET} --no-deps -d dl --index-url https://pypi.org/simple "
        "--retries 0 --timeout 30 idna==3.10; echo pip-exit=$?; ls dl"
    )
    output = _run(_pip_harness(tmp_path, command, rules))
    if allowed:
        assert "pip-exit=0" in output and "idna-3.10-py3-none-any.whl" in output, output
        assert "pypi.org:443" in output and "files.pythonhosted.org:443" in output
    else:
        assert "pip-exit=0" not in output and "idna-3.10" not in output.split("pip-exit")[-1]
        assert "pypi.org:443 is not allowed" in output  # pip shows the proxy's one line too
        assert 'allow = ["pypi.org"]' in output


@pytest.mark.parametrize("allowed", [True, False])
def test_pip_install_target_from_a_local_registry(
    tmp_path: Path, registry: dict[str, Any], allowed: bool
) -> None:
    rules = 'allow = ["127.0.0.2"]\nlocal = ["127.0.0.2"]' if allowed else 'local = ["127.0.0.2"]'
    command = (
        f"{PIP} install {PIP_QUIET} --no-deps --target lib --index-url {registry['url']} "
        f"--retries 0 {PACKAGE}; echo pip-exit=$?; ls lib"
    )
    output = _run(_pip_harness(tmp_path, command, rules))
    if allowed:
        assert "pip-exit=0" in output and f"{PACKAGE}.py" in output, output
        assert registry["seen"]  # it went to the registry
    else:
        assert "pip-exit=0" not in output and registry["seen"] == []
        assert f"{registry['host']} is not allowed" in output


def test_pip_install_requirements_in_a_workspace_venv_runs_without_asking_and_is_journaled(
    tmp_path: Path, registry: dict[str, Any]
) -> None:
    """Under assisted, sandbox on, the registry allowed: ``pip install -r
    requirements.txt`` in the workspace's venv runs (headless: an ask would be a "no"),
    installs through the proxy, and ``ketch sessions show`` lists each connection."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    subprocess.run([sys.executable, "-m", "venv", str(workspace / ".venv")], check=True)
    (workspace / "requirements.txt").write_text(f"--index-url {registry['url']}\n{PACKAGE}\n")
    config = tmp_path / "config"
    config.mkdir()
    (config / "config.toml").write_text(
        f'[sandbox.network]\nallow = ["{registry["host"]}"]\nlocal = ["127.0.0.2"]\n'
    )
    script = [
        call(
            "shell",
            {
                "command": f"pip install {PIP_QUIET} --retries 0 -r requirements.txt",
                "network": True,
            },
        ),
        text("installed"),
    ]
    env = cli_env(tmp_path, script)
    env.update(
        KETCH_CONFIG_DIR=str(config),
        KETCH_PLUGINS="guards,store,crypto,policy,shell,sandbox,headless,scripted_plugin",
        PATH=f"{workspace / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
    )
    done = run_ketch(
        "-p", "install the requirements", "--provider", "scripted", "--profile", "assisted",
        "--output-format", "stream-json", cwd=workspace, env=env, timeout=300,
    )  # fmt: skip
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    permissions = [e for e in events if e["type"] == "permission"]
    assert all(p["decision"] == "allow" for p in permissions), permissions  # nothing asked
    (result,) = [e for e in events if e["type"] == "tool_result"]
    assert result["ok"], result["output"]
    installed = list((workspace / ".venv" / "lib").glob(f"python*/site-packages/{PACKAGE}.py"))
    assert installed, result["output"]
    egress = [e for e in events if e["type"] == "egress"]
    assert egress and all(e["allowed"] and e["host"] == "127.0.0.2" for e in egress)
    session = next(e for e in events if e["type"] == "session")["session_id"]
    shown = run_ketch("sessions", "show", session, cwd=workspace, env=env)
    assert shown.returncode == 0, shown.stderr
    lines = [line for line in shown.stdout.splitlines() if " egress " in line]
    assert len(lines) == len(egress), shown.stdout
    assert all(f"{registry['host']} allowed (allow '{registry['host']}')" in ln for ln in lines)
