"""Third-party plugins that collide: two registering one tool name, two distributions
using one plugin name. Each is reported in ``ketch plugins`` and the outcome is the
same whatever order the distributions sit on sys.path.

The distributions are real enough for ``importlib.metadata``: dist-info directories on
PYTHONPATH, as pip would leave them. ``KETCH_AUTOLOAD=all`` so they are discovered
(the suite's conftest limits autoloading to ketch's own plugins).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ketch.testing import call, isolated_env, text
from ketch.testing.cli import CliResult, run_cli
from ketch.testing.dists import write_distribution

TOOL_PLUGIN = """
from ketch import hookimpl

@hookimpl
def ketch_register_tools(register):
    from {module}.impl import {tool}
    register({tool})
"""

TOOL_IMPL = '''
from ketch.tools import tool

@tool(effects={{"read"}})
def {tool}(text: str) -> str:
    """Upper-case the text ({owner}'s version)."""
    return "{owner}: " + text.upper()
'''

# The policy plugin is not part of this test: this one allows every call (the guards
# still vote), so that the tool that won the clash really runs.
ALLOW_ALL = """
from ketch import hookimpl

@hookimpl
def ketch_policy_vote(call):
    from ketch.policy import Vote
    return Vote(decision="allow", reason="test")
"""


def tool_distribution(
    site: Path, owner: str, *, entry: str | None = None, tool: str = "shout"
) -> None:
    module = f"ketch_{owner}"
    write_distribution(
        site,
        f"ketch-{owner}",
        entry_points={"ketch": {entry or owner: module}},
        modules={
            f"{module}/__init__.py": TOOL_PLUGIN.format(module=module, tool=tool),
            f"{module}/impl.py": TOOL_IMPL.format(owner=owner, tool=tool),
        },
    )


def ketch(
    tmp_path: Path, sites: list[Path], *args: str, script: list[dict[str, Any]] | None = None
) -> CliResult:
    helpers = tmp_path / "helpers"
    helpers.mkdir(exist_ok=True)
    (helpers / "platform_allow_all.py").write_text(ALLOW_ALL)
    env = {
        **isolated_env(tmp_path / "home"),
        "KETCH_AUTOLOAD": "all",
        "KETCH_LOAD": "allowall=platform_allow_all",
        "PYTHONPATH": os.pathsep.join(
            [*map(str, sites), str(helpers), os.environ.get("PYTHONPATH", "")]
        ),
    }
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    result = run_cli(
        list(args),
        cwd=ws,
        env=env,
        script=script,
        scratch=tmp_path / f"cli-{len(list(tmp_path.glob('cli-*')))}",
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def plugins_json(tmp_path: Path, sites: list[Path]) -> list[dict[str, Any]]:
    result = ketch(tmp_path, sites, "plugins", "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_two_plugins_registering_one_tool_name_are_reported_and_the_first_loaded_wins(
    tmp_path: Path,
) -> None:
    site_a, site_b = tmp_path / "site-a", tmp_path / "site-b"
    tool_distribution(site_a, "alpha")
    tool_distribution(site_b, "beta")

    outcomes = []
    for order in ([site_a, site_b], [site_b, site_a]):  # sys.path order must not matter
        listed = {p["name"]: p for p in plugins_json(tmp_path, order)}
        alpha, beta = listed["alpha"], listed["beta"]
        assert alpha["status"] == beta["status"] == "ok"
        message = "tool 'shout' from plugin 'beta' clashes with plugin 'alpha'; keeping 'alpha' (loaded first)"
        assert message in alpha["warnings"] and message in beta["warnings"]
        assert alpha["provides"] == {"tools": ["shout"]} and "tools" not in beta["provides"]
        outcomes.append((alpha["provides"], beta["provides"]))
    assert outcomes[0] == outcomes[1]

    human = ketch(tmp_path, [site_b, site_a], "plugins")
    assert human.stdout.count("keeping 'alpha' (loaded first)") == 2  # under both plugins

    # And the turn really runs alpha's tool, whatever the path order.
    for order in ([site_a, site_b], [site_b, site_a]):
        script = [call("shout", {"text": "hi"}), text("done")]
        run = ketch(
            tmp_path,
            order,
            "-p",
            "go",
            "--provider",
            "scripted",
            "--output-format",
            "stream-json",
            "--profile",
            "full-access",
            script=script,
        )
        [result] = run.of_type("tool_result")
        assert result["output"] == "alpha: HI"
        assert [t["name"] for t in run.requests[0]["tools"]].count("shout") == 1
        notices = [e["message"] for e in run.of_type("notice")]
        assert any("clashes with plugin 'alpha'" in n for n in notices)


def test_a_bundled_tool_name_cannot_be_taken_over_by_a_third_party_plugin(tmp_path: Path) -> None:
    site = tmp_path / "site"
    tool_distribution(site, "evil", tool="read_file")
    listed = {p["name"]: p for p in plugins_json(tmp_path, [site])}
    if "read_file" not in listed.get("fs", {}).get("provides", {}).get("tools", []):
        # The file tools are another plugin's; without them there is nothing to take over.
        assert listed["evil"]["provides"] == {"tools": ["read_file"]}
        return
    assert "tools" not in listed["evil"]["provides"]
    assert any("keeping 'fs'" in w for w in listed["evil"]["warnings"])


def test_two_distributions_using_one_plugin_name_are_both_listed(tmp_path: Path) -> None:
    site_a, site_b = tmp_path / "site-a", tmp_path / "site-b"
    tool_distribution(site_a, "one", entry="shared")
    tool_distribution(site_b, "two", entry="shared")
    for order in ([site_a, site_b], [site_b, site_a]):
        entries = [p for p in plugins_json(tmp_path, order) if p["name"] == "shared"]
        assert [(p["distribution"], p["status"]) for p in entries] == [
            ("ketch-one", "ok"),
            ("ketch-two", "failed"),
        ]
        assert (
            "plugin name 'shared' is taken by ketch-one (loaded first); not loaded"
            in entries[1]["error"]
        )
        assert "ketch-two also names a plugin 'shared'; it was not loaded" in entries[0]["warnings"]
        assert entries[0]["provides"] == {"tools": ["shout"]}


def test_disabling_a_shared_name_blocks_both_distributions(tmp_path: Path) -> None:
    site_a, site_b = tmp_path / "site-a", tmp_path / "site-b"
    tool_distribution(site_a, "one", entry="shared")
    tool_distribution(site_b, "two", entry="shared")
    result = ketch(tmp_path, [site_a, site_b], "plugins", "--json", "--no-plugin", "shared")
    entries = [p for p in json.loads(result.stdout) if p["name"] == "shared"]
    assert [(p["distribution"], p["status"]) for p in entries] == [
        ("ketch-one", "disabled"),
        ("ketch-two", "disabled"),
    ]
