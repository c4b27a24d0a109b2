"""A corpus of real Claude Code agents, commands and skills (tests/compat_corpus: public,
permissively licensed files nobody on this project wrote, copied unchanged; SOURCES.md
names each one's repository, commit and licence) loads in ketch with nothing dropped
silently: every file is a command, a skill or an agent definition, or one line names
it and says why not. And the front matter reads as Claude Code reads it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from ketch.testing import Harness, text
from ketch_prompt_kit.markdown_files import parse

CORPUS = Path(__file__).parents[1] / "compat_corpus"
PLUGINS = ["commands", "skills", "agents", "fs", "shell", "policy"]


def corpus_files(kind: str) -> list[Path]:
    files = sorted(p for p in CORPUS.rglob("*.md") if p.name != "SOURCES.md")
    if kind == "agents":
        return [p for p in files if p.parent.name == "agents"]
    if kind == "skills":
        return [p for p in files if p.name == "SKILL.md"]
    return [p for p in files if "commands" in p.relative_to(CORPUS).parts]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home-dir"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KETCH_CONFIG_DIR", str(tmp_path / "config"))
    return home


@pytest.fixture
def loaded(tmp_path: Path) -> tuple[Harness, dict[Path, Path]]:
    """Every corpus file laid out as a project's .claude/ folder, as its plugin would
    install it: commands under a folder named after their plugin (``/plugin:name``),
    agents under their plugin's folder, skills in their own folders."""
    workspace = tmp_path / "ws"
    claude = workspace / ".claude"
    placed: dict[Path, Path] = {}
    for source in corpus_files("commands"):
        plugin = source.relative_to(CORPUS).parts[1]
        target = claude / "commands" / plugin / source.name
        placed[source] = target
    for source in corpus_files("agents"):
        collection, plugin = source.relative_to(CORPUS).parts[:2]
        placed[source] = claude / "agents" / collection / plugin / source.name
    for source in corpus_files("skills"):
        placed[source] = claude / "skills" / source.parent.name / "SKILL.md"
    for source, target in placed.items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    # A project's agents and skills with scripts run only once the person trusted them
    # (docs/trust.md): trust everything the corpus holds, as `ketch trust --yes` would.
    from ketch_trust.collect import all_items
    from ketch_trust_kit import PinStore

    first = Harness.create(tmp_path, script=[text("ok")], bundled=[*PLUGINS, "trust"])
    PinStore().pin(first.kernel.workspace, all_items(first.kernel))
    h = Harness.create(tmp_path, script=[text("ok")], bundled=PLUGINS)
    _ = h.session  # the session's start says the kernel's notices
    return h, placed


def test_the_corpus_is_real_and_big_enough() -> None:
    counts = {kind: len(corpus_files(kind)) for kind in ("agents", "commands", "skills")}
    assert sum(counts.values()) >= 30 and all(counts.values()), counts
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for path in CORPUS.rglob("*.md"):
        if path.name != "SOURCES.md":
            assert f"| {path.relative_to(CORPUS)} |" in sources, path  # every file's origin noted
    assert "Apache-2.0" in sources and "MIT" in sources


def test_every_corpus_file_loads_or_is_named_with_a_reason(
    loaded: tuple[Harness, dict[Path, Path]],
) -> None:
    h, placed = loaded
    notices = [n for n in h.kernel.notices]
    commands = h.kernel.commands
    from ketch_agents.definitions import load
    from ketch_skills.discovery import skills

    definitions, _ = load(h.kernel.workspace)
    agent_paths = {d.path for d in definitions.values() if d.path is not None}
    skill_paths = {s.markdown.path for s in skills(h.kernel.workspace)}
    command_paths = {c.extra.get("path") for c in commands.values() if c.extra.get("path")}
    dropped = []
    for source, target in placed.items():
        used = target in agent_paths | skill_paths | command_paths
        named = [n for n in notices if str(target) in n]
        if not used:
            dropped.append(source)
            assert named, f"{source} was dropped without a word"
            assert len(named) == 1 and re.search(r"(not used|not a |skipped)", named[0]), named
    # The only drops are agents whose name another plugin's agent already has (Claude
    # Code namespaces them by plugin; in one .claude/agents folder, one wins).
    assert all(p.parent.name == "agents" for p in dropped), dropped
    assert len(dropped) <= 4
    # Nothing else was said about the corpus: its front matter all parsed.
    assert [n for n in notices if ".claude" in n and "not used" not in n] == []


def test_commands_keep_their_front_matter_and_namespaced_names(
    loaded: tuple[Harness, dict[Path, Path]],
) -> None:
    h, placed = loaded
    commands = h.kernel.commands
    review = commands["pr-review-toolkit:review-pr"]
    assert review.extra["argument_hint"] == "[review-aspects]"
    assert review.help.startswith("Comprehensive PR review")
    commit = commands["commit-commands:commit"]
    assert commit.aliases == ("commit",)  # unambiguous: /commit works too
    for source, target in placed.items():
        if "commands" not in source.relative_to(CORPUS).parts:
            continue
        name = f"{target.parent.name}:{target.stem}".lower()
        assert name in commands, name
        meta, _, problem = parse(source.read_text(encoding="utf-8").replace("\r\n", "\n"))
        assert problem == ""
        if meta.get("description"):
            assert commands[name].help == " ".join(str(meta["description"]).split())


def test_the_pr_review_toolkit_agents_claude_code_loads_load_here(
    loaded: tuple[Harness, dict[Path, Path]],
) -> None:
    """The three of Anthropic's own agent files strict YAML rejects (an unquoted ``: ``
    inside a description): Claude Code quotes and parses again, and so does ketch."""
    h, _ = loaded
    from ketch_agents.definitions import load

    definitions, _ = load(h.kernel.workspace)
    hunter = definitions["silent-failure-hunter"]
    assert hunter.description.startswith("Use this agent when reviewing code changes")
    assert hunter.model == "inherit" and "silent failures" in hunter.prompt
    for name in ("comment-analyzer", "pr-test-analyzer", "type-design-analyzer"):
        assert definitions[name].description, name


def test_claude_codes_documented_argument_hint_keeps_the_whole_front_matter() -> None:
    meta, body, problem = parse(
        "---\nargument-hint: [pr-number] [priority] [assignee]\ndescription: Review PR #$1: with priority\n"
        "allowed-tools: Bash(gh pr view:*), Read\nmodel: haiku\n---\nReview PR #$1.\n"
    )
    assert problem == ""
    assert meta == {
        "argument-hint": "[pr-number] [priority] [assignee]",
        "description": "Review PR #$1: with priority",
        "allowed-tools": "Bash(gh pr view:*), Read",
        "model": "haiku",
    }
    assert body.strip() == "Review PR #$1."


def test_a_hash_in_a_value_is_kept_not_read_as_a_comment() -> None:
    meta, _, problem = parse("---\ndescription: Fix issue #123 fast\n---\nx")
    assert meta["description"] == "Fix issue #123 fast" and problem == ""


def test_front_matter_that_even_claude_code_cannot_parse_keeps_its_plain_lines() -> None:
    meta, body, problem = parse(
        "---\nname: broken\ndescription: fine text\ntools: [Read, Grep\n  - oops: [\n---\nbody text"
    )
    assert meta["name"] == "broken" and meta["description"] == "fine text"
    assert re.match(r"line \d+: the front matter is not valid YAML", problem)
    assert body.strip() == "body text"


def test_a_broken_front_matter_is_said_once_with_the_file_and_line(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    command = workspace / ".claude" / "commands" / "deploy.md"
    command.parent.mkdir(parents=True)
    command.write_text(
        "---\ndescription: Deploy it\nfoo:\n  - a\n bar: b\n---\nDeploy now.\n", encoding="utf-8"
    )
    bad = workspace / ".claude" / "commands" / "latin1.md"
    bad.write_bytes(b"caf\xe9 au lait\n")
    h = Harness.create(tmp_path, script=[text("ok")], bundled=PLUGINS)
    assert h.kernel.commands["deploy"].help == "Deploy it"  # used, with what could be read
    said = [n for n in h.kernel.notices if "deploy.md" in n]
    assert len(said) == 1 and re.search(r"deploy\.md: line 5: ", said[0]), said
    assert any(n.startswith(f"{bad}: not UTF-8 text") for n in h.kernel.notices)
