"""Issue 28 item 3: the managed policy (``/etc/ketch/managed.toml``, here through
``KETCH_MANAGED_FILE``) narrows what users, workspaces, the environment and the command
line may ask for, and names itself when it refuses.

Real ``ketch`` subprocesses; the mandatory deny rule is judged by its effect (a canary
file's content never reaches the model).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch.testing import call, text

ROOT = Path(__file__).resolve().parents[2]
CANARY = "KETCHMANAGEDCANARY9d2e"


def _setup(
    tmp_path: Path, managed: str, user: str = "", workspace: str = ""
) -> tuple[Path, Path, dict[str, str]]:
    ws = tmp_path / "ws"
    (ws / ".ketch").mkdir(parents=True)
    (ws / ".ketch" / "config.toml").write_text(workspace, encoding="utf-8")
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(user, encoding="utf-8")
    policy = tmp_path / "etc" / "managed.toml"
    policy.parent.mkdir()
    policy.write_text(managed, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "KETCH_MANAGED_FILE": str(policy),
        "KETCH_LOAD": "ketch.testing.scripted_plugin",
        "KETCH_PLUGINS": "guards,policy,fs,headless,scripted_plugin,sandbox,web,trust,admin",
        "KETCH_SCRIPT_LOG": str(tmp_path / "requests.jsonl"),
    }
    return ws, policy, env


def _ketch(
    *args: str, cwd: Path, env: dict[str, str], script: list[dict[str, Any]] | None = None
) -> subprocess.CompletedProcess[str]:
    if script is not None:
        path = cwd.parent / "script.json"
        path.write_text(json.dumps(script), encoding="utf-8")
        env = {**env, "KETCH_SCRIPT": str(path)}
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


FORBID = '[permissions]\nforbidden_profiles = ["full-access"]\n'


@pytest.mark.parametrize(
    "where",
    ["command line", "environment", "user config", "workspace config"],
)
def test_full_access_is_refused_wherever_it_is_asked_for(tmp_path: Path, where: str) -> None:
    asks = 'profile = "full-access"\n'
    ws, policy, env = _setup(
        tmp_path,
        FORBID,
        user=asks if where == "user config" else "",
        workspace=asks if where == "workspace config" else "",
    )
    args = ["-p", "hello", "--provider", "scripted"]
    if where == "command line":
        args += ["--profile", "full-access"]
    if where == "environment":
        env["KETCH_PROFILE"] = "full-access"
    if where == "workspace config":  # untrusted, a workspace cannot ask for a profile at all
        trusted = _ketch("trust", "--yes", cwd=ws, env=env)
        assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    run = _ketch(*args, cwd=ws, env=env, script=[text("should not run")])
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    assert str(policy) in run.stderr and "full-access" in run.stderr and "forbidden" in run.stderr
    assert not (tmp_path / "requests.jsonl").exists()  # the model was never called


def test_other_profiles_still_run(tmp_path: Path) -> None:
    ws, _, env = _setup(tmp_path, FORBID)
    run = _ketch(
        "-p",
        "hello",
        "--provider",
        "scripted",
        "--profile",
        "assisted",
        cwd=ws,
        env=env,
        script=[text("hi")],
    )
    assert run.returncode == 0, run.stderr


def test_a_mandatory_deny_rule_beats_a_users_allow(tmp_path: Path) -> None:
    ws, _, env = _setup(
        tmp_path,
        '[permissions]\ndeny = ["read_file"]\n',
        user='[permissions]\nallow = ["read_file"]\ndeny = []\n',
    )
    (ws / "secret.txt").write_text(CANARY)
    script = [call("read_file", {"path": "secret.txt"}), text("done")]
    run = _ketch(
        "-p",
        "read it",
        "--provider",
        "scripted",
        "--profile",
        "assisted",
        cwd=ws,
        env=env,
        script=script,
    )
    assert run.returncode == 0, run.stderr
    assert CANARY not in (tmp_path / "requests.jsonl").read_text()  # never read, never sent


def test_config_show_origin_names_each_layer(tmp_path: Path) -> None:
    ws, policy, env = _setup(
        tmp_path,
        FORBID + 'deny = ["web_fetch"]\n[loop]\nmax_iterations = 7\n',
        user='model = "user-model"\n[permissions]\ndeny = ["shell(rm)"]\n',
    )
    run = _ketch("config", "show", "--origin", cwd=ws, env=env)
    assert run.returncode == 0, run.stderr
    lines = {
        line.split(" = ")[0].strip(): line for line in run.stdout.splitlines() if " = " in line
    }
    assert (
        f"managed ({policy})" in lines["loop.max_iterations"]
        and "7" in lines["loop.max_iterations"]
    )
    assert f"managed ({policy})" in lines["permissions.deny"]
    assert '"shell(rm)"' in lines["permissions.deny"] and '"web_fetch"' in lines["permissions.deny"]
    assert "user (" in lines["model"]
    assert "defaults" in lines["loop.duplicate_call_limit"]
    data = json.loads(_ketch("config", "show", "--origin", "--json", cwd=ws, env=env).stdout)
    assert {"key": "model", "value": "user-model", "origin": lines["model"].split("# ")[1]} in data


def test_managed_plugins_disable_and_require(tmp_path: Path) -> None:
    ws, policy, env = _setup(tmp_path, '[plugins]\ndisable = ["web"]\nrequired = ["sandbox"]\n')
    run = _ketch("plugins", "--json", "--no-plugin", "sandbox", cwd=ws, env=env)
    assert run.returncode == 0, run.stderr
    status = {p["name"]: p for p in json.loads(run.stdout)}
    assert status["web"]["status"] == "disabled" and str(policy) in status["web"]["disabled_by"]
    assert status["sandbox"]["status"] == "ok"
    assert "required by the managed policy" in run.stderr


def test_a_required_sandbox_cannot_be_turned_off(tmp_path: Path) -> None:
    ws, policy, env = _setup(
        tmp_path, "[sandbox]\nrequired = true\n", user="[sandbox]\nenabled = false\n"
    )
    run = _ketch("-p", "hello", "--provider", "scripted", cwd=ws, env=env, script=[text("x")])
    assert run.returncode == 2 and str(policy) in run.stderr and "enabled = false" in run.stderr, (
        run.stderr
    )


def test_allowed_providers_and_models(tmp_path: Path) -> None:
    ws, policy, env = _setup(
        tmp_path, 'allowed_providers = ["scripted"]\nallowed_models = ["scripted-*"]\n'
    )
    ok = _ketch("-p", "hello", "--provider", "scripted", cwd=ws, env=env, script=[text("x")])
    assert ok.returncode == 0, ok.stderr
    model = _ketch(
        "-p",
        "hello",
        "--provider",
        "scripted",
        "--model",
        "other",
        cwd=ws,
        env=env,
        script=[text("x")],
    )
    assert (
        model.returncode == 2
        and "model 'other' is not allowed" in model.stderr
        and str(policy) in model.stderr
    )
    env["OPENAI_API_KEY"] = "sk-test"
    env["KETCH_PLUGINS"] += ",openai"
    provider = _ketch("-p", "hello", "--provider", "openai", "--model", "gpt", cwd=ws, env=env)
    assert provider.returncode == 2 and "provider 'openai' is not allowed" in provider.stderr, (
        provider.stderr
    )


def test_a_broken_managed_file_fails_closed(tmp_path: Path) -> None:
    ws, policy, env = _setup(tmp_path, "[permissions\nbroken")
    run = _ketch("-p", "hello", "--provider", "scripted", cwd=ws, env=env, script=[text("x")])
    assert (
        run.returncode == 2
        and str(policy) in run.stderr
        and "does not run without it" in run.stderr
    ), run.stderr


def test_the_managed_network_rules_bound_and_add(tmp_path: Path) -> None:
    """``[sandbox.network]`` in the managed file: its allow bounds the user's (never allows
    by itself), its deny adds, its inject is never read; composed where the sandbox and
    web_fetch compose their rules."""
    from ketch.config import Layer
    from ketch_net_kit.config import compose, inject_rules

    user = Layer("user", "config.toml", {"sandbox": {"network": {
        "allow": ["pypi.org", "example.com", "*.github.com"],
        "inject": {"api.test": {"placeholder": "KETCH_PLACEHOLDER_1", "env": "X"}}}}})  # fmt: skip
    managed = Layer("managed", "/etc/ketch/managed.toml", {"sandbox": {"network": {
        "allow": ["pypi.org", "*.github.com", "corp.internal"], "deny": ["gist.github.com"],
        "inject": {"evil.test": {"placeholder": "KETCH_PLACEHOLDER_2", "env": "Y"}}}}})  # fmt: skip
    rules = compose([user, managed], "manual")
    assert sorted(str(p) for p in rules.allow) == [
        "*.github.com",
        "pypi.org",
    ]  # example.com dropped
    assert "corp.internal" not in {str(p) for p in rules.allow}  # the policy never allows by itself
    assert "gist.github.com" in {str(p) for p in rules.deny}
    assert set(inject_rules([user, managed])) == {"api.test"}
    alone = compose([Layer("user", "config.toml", {}), managed], "manual")
    assert list(alone.allow) == []
