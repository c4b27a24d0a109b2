"""``ketch -p`` imports nothing before its first model request that the request does not need.

A real ``ketch -p`` runs in a subprocess against an OpenAI-compatible server on
127.0.0.1 (the default plugins, the store with a file keyring); an audit hook in the
process (``first_request_probe.py``) notes which modules are loaded at the moment the
first request connects. Every one of them must be on the list in
``first_request_modules.txt``: ketch's own modules by their full name (a tool module
imported to build a schema, a command module loaded to register a command, is a
failure), everything else by its top-level package. Modules another thread imported
meanwhile (the store opening beside the request) are not on the request's path and are
not counted. The first run fills the discovery and tool caches; the second is checked.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ketch.testing import isolated_env
from tests.platform.openai_stub import Answer, OpenAIStub

HERE = Path(__file__).parent
PROBE = HERE / "first_request_probe.py"
ALLOWED_FILE = HERE / "first_request_modules.txt"


def allowed() -> set[str]:
    lines = ALLOWED_FILE.read_text(encoding="utf-8").splitlines()
    return {line.split("#")[0].strip() for line in lines} - {""}


def counted(module: str) -> str:
    """ketch's modules by full name, the rest by top-level package."""
    top = module.split(".")[0]
    return module if top == "ketch" or top.startswith("ketch_") else top


def probe(tmp_path: Path, stub: OpenAIStub, out: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
    env.update(isolated_env(tmp_path / "home"))
    env.pop("KETCH_PLUGINS", None)  # the default build: every bundled plugin
    port = stub.base_url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    env.update(
        {
            "HOME": str(tmp_path / "home"),
            "OPENAI_API_KEY": "sk-test-not-a-key",
            "OPENAI_BASE_URL": stub.base_url,
            "PYTHON_KEYRING_BACKEND": "ketch.testing.keyring_backend.FileKeyring",
            "KETCH_TEST_KEYRING_FILE": str(tmp_path / "keyring.json"),
            "PROBE_PORT": port,
            "PROBE_OUT": str(out),
        }
    )
    argv = [
        sys.executable,
        str(PROBE),
        "--provider",
        "openai",
        "--model",
        "gpt-4o-mini",
        "-p",
        "hi",
    ]
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    return subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=120)


def test_print_mode_imports_only_what_its_first_request_needs(tmp_path: Path) -> None:
    cold, warm = tmp_path / "cold.json", tmp_path / "warm.json"
    with OpenAIStub(Answer(text="done"), Answer(text="done")) as stub:
        for out in (cold, warm):
            run = probe(tmp_path, stub, out)
            assert run.returncode == 0, run.stderr[-2000:]
            assert out.exists(), "no request reached the model server"
    # The cached schemas are the ones the tool modules declare.
    first, second = stub.requests
    assert first["tools"], "the first request carried no tools"
    assert second["tools"] == first["tools"]

    seen = json.loads(warm.read_text(encoding="utf-8"))
    loaded = {counted(m) for m in set(seen["loaded"]) - set(seen["concurrent"])}
    extra = sorted(loaded - allowed())
    assert not extra, (
        f"`ketch -p` imported before its first request: {extra}. Import it at first use "
        f"(inside the hook or tool that needs it), or, if the first request truly needs it, "
        f"add it to {ALLOWED_FILE.name} with the reason."
    )
