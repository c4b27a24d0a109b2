"""Rule syntax: parsing (with clear errors), matching paths, commands and hosts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ketch.tools import Effect
from ketch_policy_kit.rules import RuleError, compile_rules, compile_scopes, parse_host, parse_rule


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("shell(git status", "missing the closing ')'"),
        ("shell()", "empty scope"),
        ("shell(git status; rm -rf /)", "cannot contain shell syntax"),
        ("shell(ls $(x))", "cannot contain shell syntax"),
        ("shell(git * push)", "only allowed at the end"),
        ("shell('unterminated)", "No closing quotation"),
        ("web(https://docs.python.org/3/)", "names a host"),
        ("web(exa mple.com)", "not a host name"),
        ("bad name(x)", "is not a tool name"),
        ("", "an empty rule"),
        ("read(a\x00b)", "NUL"),
    ],
)
def test_malformed_rules_say_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(RuleError) as raised:
        parse_rule(text)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_non_string_rule_is_an_error_too() -> None:
    with pytest.raises(RuleError, match="is a string"):
        parse_rule(42)  # type: ignore[arg-type]


def test_compile_reports_errors_and_marks_broken_restrictions() -> None:
    rules = compile_rules(("shell(ok:*)", "shell(("), ("web(",), ())
    assert [r.text for r in rules.allow] == ["shell(ok:*)"]
    assert len(rules.errors) == 2
    assert rules.errors[0].startswith("[permissions] allow[1]:")
    assert rules.broken_restrictions == (rules.errors[1],)


def test_shell_prefix_matching() -> None:
    exact = parse_rule("shell(git diff)")
    prefix = parse_rule("shell(git diff:*)")
    legacy = parse_rule("shell(git diff *)")
    assert exact.matches_command("shell", ("git", "diff"), False, strict=True)
    assert not exact.matches_command("shell", ("git", "diff", "HEAD"), False, strict=True)
    assert not exact.matches_command(
        "shell", ("git", "diff"), True, strict=True
    )  # xargs adds arguments
    assert prefix.matches_command("shell", ("git", "diff", "--stat"), False, strict=True)
    assert legacy == parse_rule("shell(git diff *)") and legacy.shell == prefix.shell
    assert not prefix.matches_command("shell", ("git", "diffx"), False, strict=True)
    assert not prefix.matches_command(
        "shell", ("/tmp/git", "diff"), False, strict=True
    )  # allow: exact program
    assert prefix.matches_command(
        "shell", ("/usr/bin/git", "diff"), False, strict=False
    )  # deny: by base name
    assert prefix.matches_command(
        "shell", (None, "diff"), False, strict=False
    )  # deny: unknown word may match
    assert not prefix.matches_command("shell", (None, "diff"), False, strict=True)
    assert parse_rule("shell").matches_command("shell", ("anything",), True, strict=True)
    assert parse_rule("shell(*)").matches_command("shell", ("anything",), False, strict=True)


def test_path_globs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    src = parse_rule("write(src/**)")
    inside = str(ws / "src" / "a" / "b.py")
    assert src.matches_path("write_file", Effect.WRITE, inside, ws)
    assert not src.matches_path(
        "write_file", Effect.READ, inside, ws
    )  # a write rule is not a read rule
    assert not src.matches_path("write_file", Effect.WRITE, str(ws / "srcx" / "a.py"), ws)
    star = parse_rule("read(*.md)")
    assert star.matches_path("read_file", Effect.READ, str(ws / "README.md"), ws)
    assert not star.matches_path("read_file", Effect.READ, str(ws / "docs" / "x.md"), ws)
    tree = parse_rule("read(docs)")
    assert tree.matches_path("read_file", Effect.READ, str(ws / "docs" / "deep" / "x.md"), ws)
    assert not tree.matches_path("read_file", Effect.READ, str(ws / "docs-old" / "x.md"), ws)
    absolute = parse_rule("read(/usr/lib/python3*/**)")
    assert absolute.matches_path("grep", Effect.READ, "/usr/lib/python3.11/json/__init__.py", ws)
    home = parse_rule("read(~/notes/*)")
    assert home.matches_path("read_file", Effect.READ, str(Path.home() / "notes" / "a"), ws)
    edit = parse_rule("edit(src/)")
    assert edit.kind == "write" and edit.matches_path("edit_file", Effect.WRITE, inside, ws)
    tool = parse_rule("write_file(src/**)")
    assert tool.matches_path("write_file", Effect.WRITE, inside, ws)
    assert not tool.matches_path("edit_file", Effect.WRITE, inside, ws)


def test_host_rules_match_the_exact_parsed_host() -> None:
    rule = parse_rule("web_fetch(docs.python.org)")
    assert rule.matches_url("web_fetch", "https://docs.python.org/3/library/", "docs.python.org")
    assert rule.matches_url("web_fetch", "https://DOCS.python.org./x", None)
    assert not rule.matches_url("web_fetch", "https://docs.python.org.evil.com/", None)
    assert not rule.matches_url("web_fetch", "https://evil.com/docs.python.org", None)
    assert not rule.matches_url("web_fetch", "https://docs.python.org@evil.com/", None)
    assert not rule.matches_url("web_fetch", "https://docs.python.org\x00.evil.com/", None)
    assert not rule.matches_url(
        "web_fetch", "https://docs.python.org/", "evil.com"
    )  # the tool disagrees
    assert not rule.matches_url("other_tool", "https://docs.python.org/", None)
    trusted = parse_rule("web(trusted.com)")
    assert not trusted.matches_url("web_fetch", "https://trusted.com.evil.com/", None)
    wildcard = parse_rule("web(*.python.org)")
    assert wildcard.matches_url("web_fetch", "https://docs.python.org/", None)
    assert not wildcard.matches_url("web_fetch", "https://python.org/", None)
    assert not wildcard.matches_url("web_fetch", "https://evilpython.org/", None)
    port = parse_rule("web(localhost:8080)")
    assert port.matches_url("web_fetch", "http://localhost:8080/x", None)
    assert not port.matches_url("web_fetch", "http://localhost:9090/x", None)
    assert parse_host("http://[::1]:80/") == ("::1", 80)
    assert parse_host("http://a b.com/") is None


def test_tool_rules_and_wildcards() -> None:
    rule = parse_rule("mcp__time__*")
    assert rule.covers_tool("mcp__time__now") and not rule.covers_tool("mcp__other__x")
    assert parse_rule("*").covers_tool("anything")
    assert not parse_rule("web_fetch(docs.python.org)").covers_tool(
        "web_fetch"
    )  # scoped: per access


def test_approval_scopes_join_several_rules_and_ignore_garbage() -> None:
    rules = compile_scopes(
        ("shell(git add:*); shell(git commit:*)", "not a rule((", "web(docs.python.org)")
    )
    assert [r.text for r in rules] == [
        "shell(git add:*)",
        "shell(git commit:*)",
        "web(docs.python.org)",
    ]
