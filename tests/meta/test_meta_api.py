"""The public API (``ketch.api``): its promise is held, and plugins import nothing else.

If ``test_api_matches_its_snapshot`` fails, a name or a signature plugins rely on
changed. If that is deliberate, update the snapshot with
``python -m tests.meta.api_snapshot --write``, commit it with the change, and say so
in the release notes; otherwise restore what changed.

If ``test_plugins_import_only_the_api`` fails, run ``python -m tests.meta.api_imports
--write`` (it rewrites ``from ketch.X import Y`` to ``from ketch.api import Y``, and is
safe to re-run); a name it reports as not in ``ketch.api`` must be exported deliberately
(kernel/ketch/api.py, then the snapshot) or not used.
"""

from __future__ import annotations

import ast
import difflib
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.meta import api_imports, api_snapshot

ROOT = Path(__file__).resolve().parents[2]
API_STUB = ROOT / "kernel" / "ketch" / "api.pyi"


def test_api_matches_its_snapshot() -> None:
    expected = api_snapshot.SNAPSHOT.read_text(encoding="utf-8")
    actual = api_snapshot.render()
    diff = "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            "api_snapshot.txt",
            "ketch.api now",
        )
    )
    assert not diff, (
        "ketch.api changed (names or signatures plugins rely on). If deliberate: "
        "`python -m tests.meta.api_snapshot --write` and commit the snapshot.\n" + diff
    )


def test_api_declarations_agree() -> None:
    """What type checkers see (``api.pyi``), what runs (``_EXPORTS``) and ``__all__``
    name the same things, from the same places."""
    import ketch.api as api

    tree = ast.parse(API_STUB.read_text(encoding="utf-8"))
    seen: dict[str, tuple[str, str | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):  # a renamed export, declared in the stub
            seen[node.name] = api._EXPORTS.get(node.name, ("?", None))
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        assert node.module
        for alias in node.names:
            local = alias.asname or alias.name
            submodule = f"{node.module}.{alias.name}"
            is_module = (submodule, None) in api._EXPORTS.values()
            seen[local] = (submodule, None) if is_module else (node.module, alias.name)
    assert seen == api._EXPORTS
    assert sorted(api.__all__) == sorted(api._EXPORTS)
    for name in api.__all__:
        assert getattr(api, name) is not None


def test_api_import_is_light() -> None:
    """Plugin entry modules import ``ketch.api`` on every start (``ketch --help``
    included): importing it loads nothing until a name is used."""
    code = textwrap.dedent(
        """
        import sys
        import ketch.api
        heavy = [m for m in ("pydantic", "pluggy", "ketch.kernel", "ketch.events") if m in sys.modules]
        print(",".join(heavy))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == ""


def test_plugins_import_only_the_api() -> None:
    report = api_imports.run([], write=False)
    problems = [f"{path}: {n} import(s) to rewrite" for path, n in sorted(report.changed.items())]
    problems += [f"not in ketch.api: {item}" for item in report.missing]
    assert not problems, (
        "plugins and kits import the kernel only through ketch.api; run "
        "`python -m tests.meta.api_imports --write`:\n  " + "\n  ".join(problems)
    )


SAMPLE = """\
from __future__ import annotations

from typing import TYPE_CHECKING

from ketch import hookimpl
from ketch.errors import KetchError  # why: errors as values
from ketch.tools import (
    Effect,
    Tool as BaseTool,
)
from ketch_tool_kit import caps

if TYPE_CHECKING:
    from ketch.kernel import Kernel
    from ketch.session import Session


def f():
    from ketch import Tool
    from ketch.cli import _positive_int
    from ketch.messages import NoSuchName

    return Tool, _positive_int, NoSuchName
"""


def test_codemod_rewrites_and_is_idempotent(tmp_path: Path) -> None:
    target = tmp_path / "plugin_mod.py"
    target.write_text(SAMPLE, encoding="utf-8")
    assert api_imports.main(["--write", str(target)]) == 1  # one name is not exported
    once = target.read_text(encoding="utf-8")
    ast.parse(once)
    assert "KetchError,  # why: errors as values" in once  # comments kept
    assert "from ketch.api import Tool as BaseTool" in once and "from ketch.tools" not in once
    assert "from ketch.api import Kernel, Session" in once  # merged by the import sorter
    assert "from ketch.api import Tool\n" in once
    assert "from ketch.api import positive_int as _positive_int" in once
    assert "from ketch.messages import NoSuchName" in once  # listed, left alone
    assert "from ketch_tool_kit import caps" in once
    api_imports.main(["--write", str(target)])
    assert target.read_text(encoding="utf-8") == once
