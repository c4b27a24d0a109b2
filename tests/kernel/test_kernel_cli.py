"""The command line as a subprocess: install, version, help, plugins, headless turns."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ketch.plugins import ESSENTIAL
from tests.kernel.kit import make_distribution

pytestmark = pytest.mark.minimal


def ketch(
    *args: str,
    cwd: Path,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        env=full_env,
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def scripted_env(tmp_path: Path, script: list[dict[str, Any]], **extra: str) -> dict[str, str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    log = tmp_path / "requests.jsonl"
    return {
        "KETCH_LOAD": "ketch.testing.scripted_plugin",
        "KETCH_SCRIPT": str(path),
        "KETCH_SCRIPT_LOG": str(log),
        **extra,
    }


def requests(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "requests.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout


def test_version_help_and_plugins(tmp_path: Path) -> None:
    version = ketch("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("ketch ")
    helped = ketch("--help", cwd=tmp_path)
    assert helped.returncode == 0
    for word in (
        "--print",
        "--output-format",
        "--max-iterations",
        "--continue",
        "--no-plugin",
        "plugins",
        "config",
    ):
        assert word in helped.stdout
    listed = ketch("plugins", "--json", cwd=tmp_path)
    assert listed.returncode == 0
    plugins = json.loads(listed.stdout)
    names = {p["name"]: p for p in plugins}
    assert names["guards"]["essential"] is True and names["guards"]["status"] == "ok"
    assert (
        names["headless"]["status"] == "ok"
        and "ketch_register_frontends" in names["headless"]["hooks"]
    )
    for entry in plugins:
        assert set(entry) >= {
            "name",
            "distribution",
            "version",
            "hooks",
            "status",
            "error",
            "import_ms",
        }


def test_version_does_not_import_pluggy_or_plugins(tmp_path: Path) -> None:
    code = "import sys; from ketch.cli import main; main(['--version']); print(sorted(m for m in sys.modules if m.startswith(('pluggy', 'pydantic', 'ketch_'))))"
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path
    )
    assert proc.stdout.strip().splitlines()[-1] == "[]"


# What `ketch --help` and `ketch plugins` must not pay for: each costs 10-60 ms at import.
HEAVY = (
    "pydantic",
    "httpx",
    "asyncio",
    "keyring",
    "cryptography",
    "sqlite3",
    "rich",
    "prompt_toolkit",
)


@pytest.mark.parametrize("argv", [["--help"], ["plugins"]])
def test_help_and_plugins_import_nothing_heavy(tmp_path: Path, argv: list[str]) -> None:
    code = (
        "import sys; from ketch.cli import main\n"
        f"try: main({argv!r})\n"
        "except SystemExit: pass\n"
        f"print('HEAVY', sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HOME": str(tmp_path)},
    )
    assert proc.stdout.strip().splitlines()[-1] == "HEAVY []", (
        proc.stdout[-500:] + proc.stderr[-500:]
    )


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    proc = ketch("--mode", "sideways", cwd=tmp_path)
    assert proc.returncode == 2
    proc = ketch("-p", "", "--provider", "scripted", cwd=tmp_path, env=scripted_env(tmp_path, []))
    assert proc.returncode == 2 and "no prompt" in proc.stderr
    no_traceback(proc)


def test_an_unknown_option_is_named_with_a_did_you_mean(tmp_path: Path) -> None:
    # Issue 26 item 6: `--modle gpt-4o` printed the whole usage and complained about gpt-4o.
    proc = ketch("--modle", "gpt-4o", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    # `--mode` belongs to the permission plugin, absent from the lightweight build; so is
    # the "did you mean" (the cli_hints plugin), where the line is argparse's own.
    has_mode = re.search(r"--mode\b", ketch("--help", cwd=tmp_path).stdout) is not None
    if "cli_hints" not in (os.environ.get("KETCH_PLUGINS") or "cli_hints").split(","):
        assert lines[0].startswith("ketch: ") and len(lines) == 2 and "usage:" not in proc.stderr
        return
    both = "--model or --mode" if has_mode else "--model"
    assert lines[0] == f"ketch: unknown option --modle (did you mean {both}?)"
    assert len(lines) == 2 and "usage:" not in proc.stderr and "gpt-4o" not in proc.stderr
    yolo = ketch("--yolo", "-p", "hi", cwd=tmp_path)
    assert yolo.returncode == 2
    if has_mode:  # the permission plugin names its own replacement for a peer's flag
        assert "--profile full-access" in yolo.stderr.splitlines()[0]
    sub = ketch("sessions", "list", "--jsn", cwd=tmp_path)
    assert sub.returncode == 2 and "did you mean --json?" in sub.stderr
    no_traceback(proc)


def test_without_the_hints_plugin_an_unknown_option_is_still_one_line(tmp_path: Path) -> None:
    proc = ketch("--no-plugin", "cli_hints", "--modle", "gpt-4o", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    # argparse's own complaint (about the word after it), but one line, not the usage.
    assert lines[0].startswith("ketch: ") and "--modle" not in lines[0]
    assert len(lines) == 2 and "usage:" not in proc.stderr and "did you mean" not in proc.stderr
    no_traceback(proc)


def test_headless_text(tmp_path: Path) -> None:
    env = scripted_env(tmp_path, [{"text": "the answer is 42"}])
    proc = ketch("-p", "what is it?", "--provider", "scripted", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "the answer is 42\n"
    (req,) = requests(tmp_path)
    assert req["messages"][-1]["parts"][0]["text"] == "what is it?"


def test_headless_prompt_from_stdin(tmp_path: Path) -> None:
    env = scripted_env(tmp_path, [{"text": "got it"}])
    proc = ketch("--provider", "scripted", cwd=tmp_path, env=env, input="piped prompt\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "got it"
    assert requests(tmp_path)[0]["messages"][-1]["parts"][0]["text"] == "piped prompt\n"


def test_headless_json(tmp_path: Path) -> None:
    env = scripted_env(
        tmp_path, [{"text": "hello", "usage": {"input_tokens": 7, "output_tokens": 3}}]
    )
    proc = ketch(
        "-p", "hi", "--provider", "scripted", "--output-format", "json", cwd=tmp_path, env=env
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["text"] == "hello" and result["stop_reason"] == "end_turn"
    assert result["usage"] == {"input_tokens": 7, "output_tokens": 3, "cache_read_input_tokens": 0}
    assert result["session_id"].startswith("ses_")
    assert result["result"] == "hello" and result["type"] == "result"  # Claude Code's names too


def test_headless_stream_json_and_failure_exit_code(tmp_path: Path) -> None:
    script = [
        {"reasoning": "hmm", "tool_calls": [{"name": "nonexistent", "input": {"a": 1}}]},
        {"error": {"kind": "auth", "message": "key rejected", "retryable": False}},
    ]
    env = scripted_env(tmp_path, script)
    proc = ketch(
        "-p",
        "go",
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 1
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [e["type"] for e in events]
    assert types[0] == "session" and types[-1] == "turn_end"
    assert {"reasoning_delta", "tool_call", "tool_result", "usage", "error"} <= set(types)
    session = events[0]
    assert {"session_id", "model", "mode", "profile"} <= set(session)
    error = next(e for e in events if e["type"] == "error")
    assert error == {**error, "kind": "auth", "retryable": False, "message": "key rejected"}
    assert events[-1]["stop_reason"] == "error"
    no_traceback(proc)


def test_max_iterations_flag(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "nope", "input": {"i": i}}]} for i in range(5)]
    env = scripted_env(tmp_path, script)
    proc = ketch(
        "-p",
        "go",
        "--provider",
        "scripted",
        "--max-iterations",
        "2",
        "--output-format",
        "json",
        cwd=tmp_path,
        env=env,
    )
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["stop_reason"] == "max_iterations"
    assert len(requests(tmp_path)) == 2


def test_corrupt_config_is_reported_with_path_and_line_and_never_crashes(tmp_path: Path) -> None:
    config_dir = Path(os.environ["KETCH_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text('model = "a"\n[loop\nmax_iterations = 3\n')
    env = scripted_env(tmp_path, [{"text": "still works"}])
    proc = ketch("-p", "hi", "--provider", "scripted", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "still works"
    assert f"{config_dir / 'config.toml'}:2" in proc.stderr and "invalid TOML" in proc.stderr
    no_traceback(proc)


def test_invalid_config_value_names_key_and_line(tmp_path: Path) -> None:
    config_dir = Path(os.environ["KETCH_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text('[loop]\n\nmax_iterations = "lots"\n')
    env = scripted_env(tmp_path, [{"text": "still works"}])
    proc = ketch("-p", "hi", "--provider", "scripted", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "still works"
    assert f"{config_dir / 'config.toml'}:3: loop.max_iterations" in proc.stderr
    no_traceback(proc)


def test_unknown_provider_is_a_clear_error(tmp_path: Path) -> None:
    proc = ketch("-p", "hi", "--provider", "nosuch", "--model", "m", cwd=tmp_path)
    assert proc.returncode == 2
    assert "unknown provider kind 'nosuch'" in proc.stderr
    no_traceback(proc)


# --- plugins as separate distributions ---------------------------------------------------------

BROKEN_IMPORT = "raise RuntimeError('this plugin is broken at import')\n"

BROKEN_REGISTRATION = """
from ketch import hookimpl

@hookimpl
def ketch_register_tools(register):
    raise ValueError('cannot register today')
"""

GOOD_TOOL = """
from ketch import hookimpl

@hookimpl
def ketch_register_tools(register):
    from ketch.tools import Effect, tool

    @tool(effects={Effect.READ})
    def shout(text: str) -> str:
        '''Upper-case the text.

        Args:
            text: what to shout
        '''
        return text.upper()

    register(shout)
"""

MARKER = """
import os, pathlib
pathlib.Path(os.environ['MARKER_FILE']).write_text('imported')
from ketch import hookimpl

@hookimpl
def ketch_register_tools(register):
    pass
"""


def dist_env(site: Path, **extra: str) -> dict[str, str]:
    return {
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "KETCH_AUTOLOAD": "all",
        "KETCH_PLUGINS": "",
        **extra,
    }


def shout_turn(tmp_path: Path, env: dict[str, str], *options: str) -> Any:
    """A real ``-p`` turn in which the scripted model calls the ``shout`` tool once."""
    script = [{"tool_calls": [{"name": "shout", "input": {"text": "hi"}}]}, {"text": "done"}]
    return ketch(
        "-p",
        "shout",
        *options,
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        "--profile",
        "full-access",
        cwd=tmp_path,
        env={**env, **scripted_env(tmp_path, script)},
    )


def test_third_party_plugins_are_discovered_isolated_and_offered(tmp_path: Path) -> None:
    site = tmp_path / "site"
    make_distribution(site, "ketch-broken-import", BROKEN_IMPORT, entry_name="brokenimport")
    make_distribution(
        site, "ketch-broken-register", BROKEN_REGISTRATION, entry_name="brokenregister"
    )
    make_distribution(site, "ketch-shout", GOOD_TOOL, entry_name="shout", version="2.3")
    env = dist_env(site)
    listed = json.loads(ketch("plugins", "--json", cwd=tmp_path, env=env).stdout)
    by_name = {p["name"]: p for p in listed}
    assert (
        by_name["brokenimport"]["status"] == "failed"
        and "broken at import" in by_name["brokenimport"]["error"]
    )
    assert (
        by_name["brokenregister"]["status"] == "failed"
        and "cannot register today" in by_name["brokenregister"]["error"]
    )
    assert by_name["shout"] == {
        **by_name["shout"],
        "status": "ok",
        "distribution": "ketch-shout",
        "version": "2.3",
    }
    assert by_name["shout"]["provides"] == {"tools": ["shout"]}

    human = ketch("plugins", cwd=tmp_path, env=env)
    assert "brokenimport" in human.stdout and "failed" in human.stdout

    proc = shout_turn(tmp_path, env)
    assert proc.returncode == 0, proc.stderr
    offered = [t["name"] for t in requests(tmp_path)[0]["tools"]]
    assert "shout" in offered
    schema = next(t for t in requests(tmp_path)[0]["tools"] if t["name"] == "shout")
    assert schema["description"] == "Upper-case the text."
    assert schema["input_schema"]["properties"]["text"]["description"] == "what to shout"
    no_traceback(proc)


def test_a_third_party_function_tool_survives_an_allow_list_and_no_plugin(
    tmp_path: Path,
) -> None:
    """A plugin registering a plain typed function (docs/plugins.md's way) keeps its tool
    under an allow-list that does not name ``function_tools`` and with ``--no-plugin
    function_tools``: the plugin that makes a function a tool is essential."""
    site = tmp_path / "site"
    make_distribution(site, "ketch-shout", GOOD_TOOL, entry_name="shout")
    env = {**dist_env(site), "KETCH_PLUGINS": "headless,policy,shout"}
    proc = shout_turn(tmp_path, env, "--no-plugin", "function_tools")
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("'function_tools' is essential and cannot be disabled" in n for n in notices)
    assert "shout" in [t["name"] for t in requests(tmp_path)[0]["tools"]]
    results = [e for e in events if e["type"] == "tool_result"]
    assert [(r["name"], r["ok"], r["output"]) for r in results] == [("shout", True, "HI")]
    no_traceback(proc)


@pytest.mark.parametrize("how", ["flag", "env", "config"])
def test_a_disabled_plugin_module_is_never_imported(tmp_path: Path, how: str) -> None:
    site = tmp_path / "site"
    make_distribution(site, "ketch-marker", MARKER, entry_name="marker")
    marker = tmp_path / "imported.txt"
    env = dist_env(site, MARKER_FILE=str(marker))
    args = ["plugins", "--json"]
    if how == "flag":
        args += ["--no-plugin", "marker"]
    elif how == "env":
        env["KETCH_DISABLE_PLUGINS"] = "web,marker"
    else:
        config_dir = Path(os.environ["KETCH_CONFIG_DIR"])
        config_dir.mkdir(parents=True, exist_ok=True)
        (config_dir / "config.toml").write_text('[plugins]\ndisable = ["marker"]\n')
    proc = ketch(*args, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    entry = next(p for p in json.loads(proc.stdout) if p["name"] == "marker")
    assert entry["status"] == "disabled" and entry["disabled_by"]
    assert not marker.exists()
    # And without blocking it is imported: the marker works.
    (Path(os.environ["KETCH_CONFIG_DIR"]) / "config.toml").unlink(missing_ok=True)
    ketch("plugins", "--json", cwd=tmp_path, env=dist_env(site, MARKER_FILE=str(marker)))
    assert marker.read_text() == "imported"


def test_essential_plugin_cannot_be_disabled(tmp_path: Path) -> None:
    proc = ketch("plugins", "--json", "--no-plugin", "guards", cwd=tmp_path)
    guards = next(p for p in json.loads(proc.stdout) if p["name"] == "guards")
    assert guards["status"] == "ok"
    assert "essential and cannot be disabled" in proc.stderr


def test_allow_list_keeps_essential(tmp_path: Path) -> None:
    proc = ketch("plugins", "--json", cwd=tmp_path, env={"KETCH_PLUGINS": "headless"})
    status = {p["name"]: p["status"] for p in json.loads(proc.stdout)}
    assert all(status[n] == "ok" for n in ESSENTIAL) and status["headless"] == "ok"
    assert all(s == "disabled" for n, s in status.items() if n not in (*ESSENTIAL, "headless"))


def test_plugins_answers_with_every_other_plugin_blocked_broken_or_disabled(
    tmp_path: Path,
) -> None:
    """``ketch plugins`` is itself a plugin, an essential one: an allow-list naming only
    broken plugins and ``--no-plugin`` naming it leave it loaded, listing why."""
    site = tmp_path / "site"
    make_distribution(site, "ketch-broken-import", BROKEN_IMPORT, entry_name="brokenimport")
    make_distribution(
        site, "ketch-broken-register", BROKEN_REGISTRATION, entry_name="brokenregister"
    )
    env = dist_env(site, KETCH_PLUGINS="brokenimport,brokenregister")
    proc = ketch("plugins", "--json", "--no-plugin", "plugin_list,fs", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "plugin 'plugin_list' is essential and cannot be disabled" in proc.stderr
    by_name = {p["name"]: p for p in json.loads(proc.stdout)}
    assert by_name["plugin_list"]["status"] == "ok" and by_name["plugin_list"]["essential"]
    assert "broken at import" in by_name["brokenimport"]["error"]
    assert "cannot register today" in by_name["brokenregister"]["error"]
    assert by_name["fs"] == {**by_name["fs"], "status": "disabled", "disabled_by": "--no-plugin"}
    assert by_name["web"]["disabled_by"] == "not in KETCH_PLUGINS"
    human = ketch("plugins", "--no-plugin", "plugin_list", cwd=tmp_path, env=env)
    assert human.returncode == 0, human.stderr
    assert "    error: import failed: " in human.stdout
    assert "    disabled by not in KETCH_PLUGINS" in human.stdout
    no_traceback(human)


def test_trace_plugins_writes_hook_calls_to_stderr(tmp_path: Path) -> None:
    """Every implementation call, with what it returned: votes included."""
    (tmp_path / "notes.txt").write_text("hello\n")
    script = [
        {"tool_calls": [{"name": "read_file", "input": {"path": "notes.txt"}}]},
        {"text": "ok"},
    ]
    env = scripted_env(tmp_path, script, KETCH_TRACE_PLUGINS="1")
    proc = ketch("-p", "hi", "--provider", "scripted", cwd=tmp_path, env=env)
    assert proc.returncode == 0
    assert "ketch: trace: ketch_register_frontends [headless]" in proc.stderr
    assert "ketch: trace: ketch_policy_vote [guards] -> " in proc.stderr


def test_tests_do_not_autoload_foreign_plugins(tmp_path: Path) -> None:
    """The suite's isolation: only ketch's own distribution autoloads here."""
    site = tmp_path / "site"
    make_distribution(site, "ketch-shout", GOOD_TOOL, entry_name="shout")
    env = {"PYTHONPATH": str(site)}  # KETCH_AUTOLOAD stays "bundled" from conftest
    names = {
        p["name"] for p in json.loads(ketch("plugins", "--json", cwd=tmp_path, env=env).stdout)
    }
    assert "shout" not in names and "guards" in names
    assert os.environ["KETCH_AUTOLOAD"] == "bundled"
