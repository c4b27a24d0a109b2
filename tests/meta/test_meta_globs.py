"""One glob engine (issue 25 item 8): rules and tools match globs through
``ketch_policy_kit.globs`` (wcmatch, its flags documented there, and the rules'
linear-time automaton of the same dialect). No other plugin module imports a glob
matcher of its own (``fnmatch``, ``wcmatch``); ``ketch_shell_kit`` keeps the dialects
of what it models (bash's expansion, grep's ``--include``). The kernel cannot import a
kit: its two ``fnmatch`` uses (a child's environment, the managed ``allowed_models``)
are outside this check."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINES = ("fnmatch", "wcmatch")
ALLOWED = ("plugins/ketch_policy_kit/globs.py", "plugins/ketch_shell_kit/")


def glob_imports(path: Path) -> list[str]:
    """The glob matchers ``path`` imports."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [n for n in names if n.split(".")[0] in ENGINES]
    return found


def test_rules_and_tools_match_globs_through_one_module() -> None:
    sources = [*ROOT.glob("plugins/**/*.py"), *ROOT.glob("contrib/**/*.py")]
    found = []
    for path in sorted(sources):
        where = path.relative_to(ROOT).as_posix()
        if "__pycache__" in where or where.startswith(ALLOWED):
            continue
        found += [f"{where}: imports {name}" for name in glob_imports(path)]
    assert not found, (
        "match globs with ketch_policy_kit.globs (match_name, names_matcher, "
        "compile_tool_glob, compile_glob), not an engine of your own:\n  " + "\n  ".join(found)
    )


def test_the_check_finds_a_glob_engine(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import fnmatch\nfrom wcmatch import glob\nimport wcmatch.fnmatch\nimport re\n",
        encoding="utf-8",
    )
    assert glob_imports(sample) == ["fnmatch", "wcmatch", "wcmatch.fnmatch"]
