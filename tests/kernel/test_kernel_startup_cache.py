"""The startup caches follow what is installed and what the code says, exactly.

Each check runs the real ``ketch`` in a subprocess (a new process, as a user starts
it) with a third-party plugin installed as a distribution on ``PYTHONPATH`` (a
``*.dist-info`` with the ``ketch`` entry point beside the package: what pip leaves);
the cache lives in the isolated ``KETCH_CACHE_DIR``. ``tests/platform`` does the same
with real ``pip install``s into a fresh virtualenv.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from ketch.testing import isolated_env
from ketch.testing.cli import run_cli
from tests.platform.openai_stub import Answer, OpenAIStub

ENTRY = """
from ketch import hookimpl
from ketch.plugins import provides


@hookimpl
@provides("hello")
def ketch_register_tools(register):
    from ketch_hello.tools import hello

    register(hello)
"""

TOOLS = '''
import os

from ketch.tools import Effect, tool

if os.environ.get("HELLO_IMPORTS"):  # every import of this module leaves a line
    with open(os.environ["HELLO_IMPORTS"], "a") as fh:
        fh.write("imported\\n")


@tool(effects={Effect.READ})
def hello(name: str) -> str:
    """Greet someone: DOC.

    Args:
        name: who to greet
    """
    return "hello " + name
'''


def install(site: Path, name: str, version: str, package: str, files: dict[str, str]) -> Path:
    """A distribution as pip leaves it: the package and its dist-info side by side."""
    for old in site.glob(f"{name.replace('-', '_')}-*.dist-info"):
        shutil.rmtree(old)
    pkg = site / package
    pkg.mkdir(parents=True, exist_ok=True)
    for file, text in files.items():
        (pkg / file).write_text(textwrap.dedent(text), encoding="utf-8")
    dist = site / f"{name.replace('-', '_')}-{version}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(
        f"[ketch]\n{package.removeprefix('ketch_')} = {package}\n", encoding="utf-8"
    )
    return dist


def uninstall(site: Path, name: str, package: str) -> None:
    for old in site.glob(f"{name.replace('-', '_')}-*.dist-info"):
        shutil.rmtree(old)
    shutil.rmtree(site / package)


def environment(tmp_path: Path, site: Path) -> dict[str, str]:
    env = {**isolated_env(tmp_path / "home"), "KETCH_AUTOLOAD": "all", "PYTHONPATH": str(site)}
    env["HELLO_IMPORTS"] = str(tmp_path / "imports.log")
    return env


def listed(tmp_path: Path, env: dict[str, str]) -> dict[str, dict[str, Any]]:
    result = run_cli(["plugins", "--json"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    return {p["name"]: p for p in json.loads(result.stdout)}


def test_discovery_cache_sees_installs_upgrades_and_removals(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    env = environment(tmp_path, site)
    cache = Path(env["KETCH_CACHE_DIR"]) / "plugins.json"

    assert "hello" not in listed(tmp_path, env)
    assert cache.exists()  # written by the run that had to read the metadata

    install(site, "ketch-hello", "1.0", "ketch_hello", {"__init__.py": ENTRY})
    found = listed(tmp_path, env)["hello"]
    assert (found["status"], found["distribution"], found["version"]) == (
        "ok",
        "ketch-hello",
        "1.0",
    )

    install(site, "ketch-hello", "2.0", "ketch_hello", {"__init__.py": ENTRY})
    assert listed(tmp_path, env)["hello"]["version"] == "2.0"

    uninstall(site, "ketch-hello", "ketch_hello")
    assert "hello" not in listed(tmp_path, env)


def test_discovery_cache_hit_reads_no_metadata(tmp_path: Path) -> None:
    """With nothing installed since the last run, discovery imports no importlib.metadata."""
    site = tmp_path / "site"
    install(site, "ketch-hello", "1.0", "ketch_hello", {"__init__.py": ENTRY})
    env = environment(tmp_path, site)
    code = (
        "import json, sys; from ketch.plugins import discover; names = [c.name for c in discover()]; "
        "print(json.dumps({'metadata': 'importlib.metadata' in sys.modules, 'hello': 'hello' in names}))"
    )

    def discovered() -> dict[str, bool]:
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=tmp_path,
            env={**_base(), **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(done.stdout)  # type: ignore[no-any-return]

    assert discovered() == {"metadata": True, "hello": True}  # cold: read and cached
    assert discovered() == {"metadata": False, "hello": True}  # warm: the cache


def _base() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}


def first_request_tools(
    tmp_path: Path, env: dict[str, str], *answers: Answer, extra: tuple[str, ...] = ()
) -> tuple[dict[str, Any], Any]:
    """Run ``ketch -p`` against a loopback OpenAI server; the first request's tools by
    name, and the run."""
    with OpenAIStub(*answers) as stub:
        result = run_cli(
            [
                "-p",
                "greet",
                "--provider",
                "openai",
                "--model",
                "m",
                "--output-format",
                "stream-json",
                *extra,
            ],
            cwd=tmp_path,
            env={**env, "OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": stub.base_url},
        )
    assert stub.requests, result.stderr
    tools = {t["function"]["name"]: t["function"] for t in stub.requests[0].get("tools", [])}
    return tools, result


def imports(env: dict[str, str]) -> int:
    log = Path(env["HELLO_IMPORTS"])
    return len(log.read_text().splitlines()) if log.exists() else 0


def hello_installed(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """ketch-hello 1.0 (its tool's docstring says "version one") and its environment."""
    site = tmp_path / "site"
    install(
        site,
        "ketch-hello",
        "1.0",
        "ketch_hello",
        {"__init__.py": ENTRY, "tools.py": TOOLS.replace("DOC", "version one")},
    )
    return site, environment(tmp_path, site)


def test_tool_cache_follows_the_code_and_loads_the_tool_when_called(tmp_path: Path) -> None:
    site, env = hello_installed(tmp_path)

    tools, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert tools["hello"]["description"] == "Greet someone: version one."
    assert imports(env) == 1  # cold: the hook ran and built the schema

    again, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert again == tools  # the same schema, byte for byte ...
    assert imports(env) == 1  # ... from the cache: the tool module was not imported

    # The source changes (an editable install, a tree on PYTHONPATH): a new key.
    tools_py = site / "ketch_hello" / "tools.py"
    tools_py.write_text(
        textwrap.dedent(TOOLS.replace("DOC", "version two, longer")), encoding="utf-8"
    )
    changed, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert changed["hello"]["description"] == "Greet someone: version two, longer."
    assert imports(env) == 2

    # A changed input model is a changed schema too.
    tools_py.write_text(
        tools_py.read_text().replace(
            "def hello(name: str)", "def hello(name: str, times: int = 1)"
        ),
        encoding="utf-8",
    )
    model, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert set(model["hello"]["parameters"]["properties"]) == {"name", "times"}
    assert imports(env) == 3

    # From the cache again, the model calls the tool: its plugin registers for real now,
    # and the call runs the real tool.
    _, run = first_request_tools(
        tmp_path,
        env,
        Answer(tool_calls=[("hello", {"name": "ada"})]),
        Answer(text="done"),
        extra=("--allow", "hello"),
    )
    assert imports(env) == 4
    [result] = run.of_type("tool_result")
    assert result["name"] == "hello"
    assert result["ok"] and result["output"] == "hello ada", json.dumps(result)


def test_without_the_tool_cache_plugin_every_hook_is_called_and_the_tools_are_the_same(
    tmp_path: Path,
) -> None:
    """``--no-plugin tool_cache``: no cache read or written, the tool module imported by
    every run, the model offered the same tools, and the tool runs."""
    _, env = hello_installed(tmp_path)
    cached, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    cache_file = Path(env["KETCH_CACHE_DIR"]) / "tools.json"
    assert cache_file.exists() and imports(env) == 1
    cache_file.unlink()

    off = ("--no-plugin", "tool_cache")
    plain, _ = first_request_tools(tmp_path, env, Answer(text="hi"), extra=off)
    again, _ = first_request_tools(tmp_path, env, Answer(text="hi"), extra=off)
    assert plain == again == cached  # the same schemas, byte for byte
    assert imports(env) == 3  # no cache: the hook ran (and imported its module) each time
    assert not cache_file.exists()
    _, run = first_request_tools(
        tmp_path,
        env,
        Answer(tool_calls=[("hello", {"name": "ada"})]),
        Answer(text="done"),
        extra=(*off, "--allow", "hello"),
    )
    [result] = run.of_type("tool_result")
    assert result["ok"] and result["output"] == "hello ada", json.dumps(result)


UNDECLARED = """
from ketch import hookimpl


@hookimpl
def ketch_register_tools(register):
    from ketch.tools import Effect, tool

    @tool(effects={Effect.READ})
    def loud(text: str) -> str:
        '''Upper-case the text.'''
        return text.upper()

    register(loud)
"""


def test_ketch_plugins_leaves_the_tool_cache_as_a_session_needs_it(tmp_path: Path) -> None:
    """``ketch plugins`` lists declared plugins without calling them, and calls an
    undeclared one: on a cold cache that must not record the declared plugins as
    registering nothing (it did: the next session was offered none of their tools)."""
    site = tmp_path / "site"
    install(site, "ketch-loud", "1.0", "ketch_loud", {"__init__.py": UNDECLARED})
    env = environment(tmp_path, site)
    assert listed(tmp_path, env)["loud"]["provides"] == {"tools": ["loud"]}
    tools, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert {"read_file", "loud"} <= set(tools)
    again, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert again == tools


def test_tool_cache_sees_a_new_distribution(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = environment(tmp_path, site)
    site.mkdir()
    before, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert "read_file" in before and "hello" not in before
    install(
        site,
        "ketch-hello",
        "1.0",
        "ketch_hello",
        {"__init__.py": ENTRY, "tools.py": TOOLS.replace("DOC", "new")},
    )
    after, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert after["hello"]["description"] == "Greet someone: new."
    assert {k: v for k, v in after.items() if k != "hello"} == before


FAILING_ENTRY = """
import os

from ketch import hookimpl
from ketch.plugins import provides


@hookimpl
@provides("hello")
def ketch_register_tools(register):
    from ketch_hello.tools import hello

    if os.environ.get("HELLO_FAIL"):
        raise RuntimeError("hello cannot register today")
    register(hello)
"""


def test_a_cached_plugin_that_fails_when_it_registers_for_real_keeps_nothing(
    tmp_path: Path,
) -> None:
    """The cache offered its tool; when the call makes it register for real and that
    raises, the plugin is failed: the call gets an error and the next request offers
    none of its tools."""
    site = tmp_path / "site"
    files = {"__init__.py": FAILING_ENTRY, "tools.py": TOOLS.replace("DOC", "cached")}
    install(site, "ketch-hello", "1.0", "ketch_hello", files)
    env = environment(tmp_path, site)
    first_request_tools(tmp_path, env, Answer(text="hi"))  # fills the cache

    with OpenAIStub(Answer(tool_calls=[("hello", {"name": "ada"})]), Answer(text="done")) as stub:
        run = run_cli(
            ["-p", "greet", "--provider", "openai", "--model", "m"]
            + ["--output-format", "stream-json", "--allow", "hello"],
            cwd=tmp_path,
            env={
                **env,
                "HELLO_FAIL": "1",
                "OPENAI_API_KEY": "sk-test",
                "OPENAI_BASE_URL": stub.base_url,
            },
        )
    offered = [[t["function"]["name"] for t in r.get("tools", [])] for r in stub.requests]
    assert "hello" in offered[0]  # from the cache
    [result] = run.of_type("tool_result")
    assert not result["ok"] and "hello" in result["output"], json.dumps(result)
    assert "hello" not in offered[1]  # the failed plugin's tool is withdrawn
    assert "plugin 'hello' failed" in run.stderr and "cannot register today" in run.stderr


OFFERED_ENTRY = """
import os
from pathlib import Path

from ketch import hookimpl
from ketch.plugins import provides


def greeting(kernel):
    # What varies, cheaply and without the tool module: whether the workspace has a
    # greeting (no: no tool), and which (it is in the tool's description).
    path = Path(kernel.workspace) / "greeting.txt"
    if os.environ.get("HELLO_LIE"):
        return False
    return path.read_text().strip() if path.exists() else False


@hookimpl
@provides(dynamic="hello, when the workspace has a greeting.txt", offered_when=greeting)
def ketch_register_tools(register, kernel):
    path = Path(kernel.workspace) / "greeting.txt"
    if not path.exists():
        return
    from ketch_hello.tools import Hello

    register(Hello(path.read_text().strip()))
"""

OFFERED_TOOLS = """
import os

from pydantic import BaseModel

from ketch.tools import Effect, Tool, ToolResult

if os.environ.get("HELLO_IMPORTS"):
    with open(os.environ["HELLO_IMPORTS"], "a") as fh:
        fh.write("imported\\n")


class HelloInput(BaseModel):
    name: str


class Hello(Tool):
    name = "hello"
    input_model = HelloInput
    effects = frozenset({Effect.READ})

    def __init__(self, greeting):
        self.greeting = greeting
        self.description = "Greet someone with " + greeting

    async def run(self, args, ctx):
        return ToolResult.success(self.greeting + " " + args.name)
"""


def test_offered_when_decides_the_tool_and_keys_its_schema(tmp_path: Path) -> None:
    """A plugin whose tools depend on the workspace declares ``offered_when``: nothing
    offered, its hook is not called and its tool module not imported; offered, its
    schema is cached under what the function returned, one entry per distinct value."""
    site = tmp_path / "site"
    files = {"__init__.py": OFFERED_ENTRY, "tools.py": OFFERED_TOOLS}
    install(site, "ketch-hello", "1.0", "ketch_hello", files)
    env = environment(tmp_path, site)
    greeting = tmp_path / "greeting.txt"

    none, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert "hello" not in none and "read_file" in none
    assert imports(env) == 0  # not offered: neither the hook nor its module ran

    greeting.write_text("good morning")
    morning, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert morning["hello"]["description"] == "Greet someone with good morning"
    assert imports(env) == 1  # a miss: the hook ran, the schema is kept
    again, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert again == morning and imports(env) == 1  # a hit: same schema, no import

    greeting.write_text("good evening")
    evening, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert evening["hello"]["description"] == "Greet someone with good evening"
    assert imports(env) == 2  # another value: another entry
    greeting.write_text("good morning")
    back, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert back == morning and imports(env) == 2  # both are kept

    # From the cache, the model calls it: the hook registers for real, the real tool runs.
    _, run = first_request_tools(
        tmp_path,
        env,
        Answer(tool_calls=[("hello", {"name": "ada"})]),
        Answer(text="done"),
        extra=("--allow", "hello"),
    )
    [result] = run.of_type("tool_result")
    assert result["ok"] and result["output"] == "good morning ada", json.dumps(result)
    assert imports(env) == 3

    greeting.unlink()
    gone, _ = first_request_tools(tmp_path, env, Answer(text="hi"))
    assert "hello" not in gone and imports(env) == 3


def test_plugins_check_reports_an_offered_when_that_disagrees_with_its_hook(
    tmp_path: Path,
) -> None:
    site = tmp_path / "site"
    install(
        site,
        "ketch-hello",
        "1.0",
        "ketch_hello",
        {"__init__.py": OFFERED_ENTRY, "tools.py": OFFERED_TOOLS},
    )
    env = environment(tmp_path, site)
    (tmp_path / "greeting.txt").write_text("hi")
    result = run_cli(["plugins", "--check", "--json"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    hello = {p["name"]: p for p in json.loads(result.stdout)}["hello"]
    assert hello["warnings"] == []
    result = run_cli(["plugins", "--check", "--json"], cwd=tmp_path, env={**env, "HELLO_LIE": "1"})
    hello = {p["name"]: p for p in json.loads(result.stdout)}["hello"]
    assert any("offered_when says no tool is offered" in w for w in hello["warnings"]), hello


def test_a_cached_tool_keeps_what_it_is_before_its_module_loads(tmp_path: Path) -> None:
    """The agent tool's schema comes from the cache (its description keyed by the agents
    listed); its first call is proposed with what the tool is (it delegates: its child
    runs inside the parent's turn) before its module loads, so the subagent runs."""
    site = tmp_path / "site"
    site.mkdir()
    env = environment(tmp_path, site)
    cold, _ = first_request_tools(tmp_path, env, Answer(text="hi"))  # fills the cache
    warm, run = first_request_tools(
        tmp_path,
        env,
        Answer(tool_calls=[("agent", {"description": "look", "prompt": "say hello"})]),
        Answer(text="hello from the child"),
        Answer(text="done"),
    )
    assert warm["agent"] == cold["agent"]
    [result] = run.of_type("tool_result")
    assert result["name"] == "agent"
    assert result["ok"] and "hello from the child" in result["output"], json.dumps(result)


def test_a_cached_record_keeps_what_the_tool_is() -> None:
    """Effects, mutating, concurrency and capabilities (the kernel's DELEGATES, the
    sandbox's "runs sandboxed") are read when a call is proposed: the record keeps them."""
    from ketch_agents.tool import AgentTool
    from ketch_tool_cache.cache import CachedTool, record

    real = AgentTool({})
    cached = CachedTool(json.loads(json.dumps(record(real))), lambda name: None)
    assert real.capabilities and cached.capabilities == real.capabilities
    assert (cached.effects, cached.mutating, cached.concurrent) == (
        real.effects,
        real.mutating,
        real.concurrent,
    )
    assert cached.input_schema() == real.input_schema()
