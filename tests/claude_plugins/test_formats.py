"""Claude Code's plugin and marketplace formats, read as Claude Code reads them
(code.claude.com/docs/en/plugins-reference and /plugin-marketplaces): sources, the
manifest's fields, the default folders and custom paths, ``strict``, and what ketch does
not use said rather than dropped. Bad input is one clear line, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ketch.errors import KetchError
from ketch_claude_plugins.bundle import hook_events, mcp_servers, read_layout
from ketch_claude_plugins.catalog import Catalog, read_catalog, source_of
from ketch_claude_plugins.items import Bundle
from tests.claude_plugins.conftest import HERE


def catalog(root: Path, plugins: list[dict], **extra: object) -> Catalog:
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    body = {"name": "acme", "owner": {"name": "A"}, "plugins": plugins, **extra}
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps(body))
    return read_catalog(root)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_the_real_marketplace_layout_reads() -> None:
    found = read_catalog(HERE / "marketplace")
    assert found.name == "ketch-test-market" and not found.problems
    assert set(found.plugins) >= {"commit-commands", "feature-dev", "hookify"}
    source = source_of(found, found.plugins["hookify"])
    assert source.path == HERE / "marketplace" / "plugins" / "hookify"


def test_anthropics_official_catalog_reads_whole(tmp_path: Path) -> None:
    """The real claude-plugins-official marketplace.json (286 plugins, catalogs/,
    SOURCES.md): every entry read, every source one ketch fetches, none refused."""
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin" / "marketplace.json").write_bytes(
        (HERE / "catalogs" / "claude-plugins-official.json").read_bytes()
    )
    found = read_catalog(tmp_path)
    assert found.name == "claude-plugins-official" and found.problems == []
    assert len(found.plugins) == 286
    sources = {name: source_of(found, entry) for name, entry in found.plugins.items()}
    in_place = [s for s in sources.values() if s.path is not None]
    assert len(in_place) == 53 and all(s.path.is_relative_to(tmp_path) for s in in_place)
    cloned = [s for s in sources.values() if s.path is None]
    assert len(cloned) == 233 and all(len(s.sha) == 40 for s in cloned)  # each pinned
    assert all(s.url.startswith("https://") for s in cloned)
    # git-subdir (83) and a url source with a path (4): the plugin is that folder.
    assert sum(1 for s in cloned if s.subdir) == 87
    assert sources["atomic-agents"].subdir == "claude-plugin/atomic-agents"
    assert sources["42crunch-api-security-testing"].subdir == "plugins/api-security-testing"
    assert sources["42crunch-api-security-testing"].ref == "v1.5.5"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            {"source": "github", "repo": "acme/tools"},
            ("https://github.com/acme/tools.git", "", "", ""),
        ),
        (
            {"source": "github", "repo": "acme/tools", "ref": "v2", "sha": "a" * 40},
            ("https://github.com/acme/tools.git", "v2", "a" * 40, ""),
        ),
        (
            {"source": "url", "url": "https://gitlab.example/team/p.git"},
            ("https://gitlab.example/team/p.git", "", "", ""),
        ),
        (
            {"source": "url", "url": "git@github.com:acme/p.git"},
            ("git@github.com:acme/p.git", "", "", ""),
        ),
        (
            {"source": "git-subdir", "url": "acme/mono", "path": "tools/plugin", "ref": "main"},
            ("https://github.com/acme/mono.git", "main", "", "tools/plugin"),
        ),
        (
            {"source": "url", "url": "https://git.example/mono.git", "path": "claude/p/"},
            ("https://git.example/mono.git", "", "", "claude/p"),
        ),
    ],
)
def test_git_sources(tmp_path: Path, source: dict, expected: tuple[str, str, str, str]) -> None:
    found = catalog(tmp_path, [{"name": "p", "source": source}])
    got = source_of(found, found.plugins["p"])
    assert (got.url, got.ref, got.sha, got.subdir) == expected


def test_relative_sources_and_plugin_root(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "fmt").mkdir(parents=True)
    found = catalog(
        tmp_path,
        [{"name": "a", "source": "./plugins/fmt"}, {"name": "b", "source": "fmt"}],
        metadata={"pluginRoot": "./plugins"},
    )
    assert source_of(found, found.plugins["a"]).path == tmp_path / "plugins" / "fmt"
    assert source_of(found, found.plugins["b"]).path == tmp_path / "plugins" / "fmt"


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("../elsewhere", "must be a relative path starting with ./"),
        ("./a/../../etc", "reaches outside"),
        ("./out", "leads outside (through a link)"),
        ({"source": "npm", "package": "@acme/p"}, "runs the package's own scripts"),
        ({"source": "command", "command": "make plugin"}, "runs a program"),
        ({"source": "archive", "url": "https://x/p.zip"}, "does not download zip archives"),
        ({"source": "url", "url": "ext::sh -c evil"}, "not a git URL"),
        ({"source": "url", "url": "-uhttps://x"}, "not a git URL"),
        ({"source": "url", "url": "ftp://x/p.git"}, "not cloned"),
        (
            {"source": "github", "repo": "acme/p", "ref": "--upload-pack=evil"},
            "not a branch or tag",
        ),
        ({"source": "github", "repo": "acme/p", "sha": "abc"}, "40-character"),
        ({"source": "git-subdir", "url": "acme/p", "path": "../up"}, "outside the repository"),
        ({"source": "url", "url": "acme/p", "path": "/etc"}, "outside the repository"),
        ({"source": "git-subdir", "url": "acme/p"}, "needs a path"),
        ({"source": "weird"}, "unknown kind"),
    ],
)
def test_sources_refused_with_the_reason(tmp_path: Path, source: object, reason: str) -> None:
    (tmp_path / "out").symlink_to(tmp_path.parent)
    found = catalog(tmp_path, [{"name": "p", "source": source}])
    with pytest.raises(KetchError) as caught:
        source_of(found, found.plugins["p"])
    assert reason in caught.value.message and "\n" not in caught.value.message


def test_a_catalog_that_is_not_one(tmp_path: Path) -> None:
    with pytest.raises(KetchError, match="not a Claude Code marketplace"):
        read_catalog(tmp_path)
    write(tmp_path / ".claude-plugin" / "marketplace.json", "{not json")
    with pytest.raises(KetchError, match="not valid JSON"):
        read_catalog(tmp_path)
    write(
        tmp_path / ".claude-plugin" / "marketplace.json", json.dumps({"name": "a b", "plugins": []})
    )
    with pytest.raises(KetchError, match="not a marketplace name"):
        read_catalog(tmp_path)
    found = catalog(
        tmp_path,
        [
            {"name": "ok", "source": "./x"},
            {"name": "ok", "source": "./y"},
            {"name": "../evil", "source": "./z"},
            {"name": "nosource"},
            "junk",
        ],
    )
    assert list(found.plugins) == ["ok"]
    assert len(found.problems) == 4  # each named, none dropped silently


def test_default_folders(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root / "commands" / "deploy.md", "Deploy")
    write(root / "agents" / "rev.md", "---\nname: rev\ndescription: r\n---\nReview")
    write(root / "skills" / "pdf" / "SKILL.md", "---\nname: pdf\ndescription: d\n---\nbody")
    write(
        root / "hooks" / "hooks.json",
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}),
    )
    write(root / ".mcp.json", json.dumps({"db": {"command": "db-server"}}))  # the flat form
    layout = read_layout(root, None, "p")
    assert layout.commands == [root / "commands"] and layout.agents == [root / "agents"]
    assert layout.skills == [root / "skills"]
    assert list(hook_events(layout.hooks[0])) == ["Stop"]
    assert list(mcp_servers(layout.mcp[0])) == ["db"]


def test_custom_paths_replace_or_add_as_claude_code_says(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root / "commands" / "old.md", "old")
    write(root / "custom" / "deploy.md", "Deploy")
    write(root / "extra" / "one.md", "One")
    write(root / "skills" / "a" / "SKILL.md", "a")
    write(root / "more-skills" / "b" / "SKILL.md", "b")
    write(root / "config" / "hooks.json", json.dumps({"hooks": {"Stop": []}}))
    write(
        root / ".claude-plugin" / "plugin.json",
        json.dumps(
            {
                "name": "p",
                "version": "2.1.0",
                "commands": ["./custom/deploy.md", "./extra/"],
                "skills": "./more-skills/",
                "hooks": "./config/hooks.json",
                "mcpServers": {"inline": {"command": "x"}},
                "lspServers": "./.lsp.json",
                "userConfig": {"token": {"type": "string", "title": "t", "description": "d"}},
            }
        ),
    )
    write(root / "bin" / "tool", "#!/bin/sh\n")
    layout = read_layout(root, {"name": "p", "source": "./p"}, "p")
    assert layout.version == "2.1.0"
    assert layout.commands == [root / "custom" / "deploy.md", root / "extra"]  # commands/ not read
    assert any("commands/ is not read" in p for p in layout.problems)
    assert layout.skills == [root / "skills", root / "more-skills"]  # skills/ still read
    assert [c.source for c in layout.hooks] == ["config/hooks.json"]
    assert mcp_servers(layout.mcp[0]) == {"inline": {"command": "x"}}
    unused = "\n".join(layout.unused)
    assert "LSP servers" in unused and "userConfig" in unused and "bin/" in unused
    bundle = Bundle("p@m", "p", root, tmp_path / "data", tmp_path / "pins.json", layout)
    assert bundle.names("commands") == ["p:one", "p:deploy"]
    assert bundle.names("skills") == ["p:a", "p:b"]


def test_strict_false_and_bad_manifests(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(root / ".claude-plugin" / "plugin.json", json.dumps({"name": "p", "commands": "./c/"}))
    with pytest.raises(KetchError, match="conflicting manifests"):
        read_layout(root, {"name": "p", "strict": False, "commands": ["./c/"]}, "p")
    write(root / ".claude-plugin" / "plugin.json", json.dumps({"name": "p", "agents": "../../etc"}))
    with pytest.raises(KetchError, match="must be a relative path|reaches outside"):
        read_layout(root, None, "p")
    write(root / ".claude-plugin" / "plugin.json", "[1, 2")
    with pytest.raises(KetchError, match="plugin.json: not valid JSON"):
        read_layout(root, None, "p")
    write(root / ".claude-plugin" / "plugin.json", "{}")
    write(root / "hooks" / "hooks.json", "nope")
    with pytest.raises(KetchError, match="hooks/hooks.json: not valid JSON"):
        read_layout(root, None, "p")


def test_the_entry_defines_a_plugin_without_a_manifest(tmp_path: Path) -> None:
    """``strict: false``: the marketplace entry is the whole definition."""
    root = tmp_path / "p"
    write(root / "tools" / "lint.md", "Lint $ARGUMENTS")
    write(root / "run.sh", "#!/bin/sh\necho hi\n")
    entry = {
        "name": "p",
        "source": "./p",
        "strict": False,
        "commands": ["./tools/lint.md"],
        "hooks": {
            "PostToolUse": [
                {
                    "matcher": "Write|Edit",
                    "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/run.sh"}],
                }
            ]
        },
    }
    layout = read_layout(root, entry, "p")
    bundle = Bundle("p@m", "p", root, tmp_path / "data", tmp_path / "pins.json", layout)
    assert bundle.names("commands") == ["p:lint"]
    [hook] = bundle.hooks()
    assert hook.item is not None and hook.table is not None
    assert hook.table["matcher"] == "write_file|edit_file"
    assert hook.table["plugin_root"] == str(root) and hook.table["claude_names"] is True
    assert dict(hook.item.files) == {"run.sh": hook.item.files[0][1]}


def test_handlers_ketch_does_not_run_are_said(tmp_path: Path) -> None:
    root = tmp_path / "p"
    write(
        root / "hooks" / "hooks.json",
        json.dumps(
            {
                "hooks": {
                    "PreToolUse": [
                        {
                            "matcher": "Bash",
                            "hooks": [{"type": "http", "url": "https://x.invalid"}],
                        },
                        {
                            "matcher": "Bash",
                            "hooks": [
                                {"type": "command", "command": "x", "if": "Bash(git push:*)"}
                            ],
                        },
                        {"matcher": "NotebookEdit", "hooks": [{"type": "command", "command": "y"}]},
                        {"hooks": [{"type": "command", "command": "echo ${user_config.token}"}]},
                    ],
                    "TeammateIdle": [{"hooks": [{"type": "command", "command": "z"}]}],
                }
            }
        ),
    )
    write(
        root / ".mcp.json",
        json.dumps({"mcpServers": {"s": {"command": "srv", "args": ["${user_config.key}"]}}}),
    )
    layout = read_layout(root, None, "p")
    bundle = Bundle("p@m", "p", root, tmp_path / "data", tmp_path / "pins.json", layout)
    assert all(entry.item is None for entry in bundle.hooks())
    said = "\n".join(bundle.unused())
    for reason in (
        "http handler",
        "no `if` conditions",
        "names no tool ketch has",
        "user_config",
        "no such event",
    ):
        assert reason in said
    assert bundle.servers()[0].item is None and "user_config" in said
