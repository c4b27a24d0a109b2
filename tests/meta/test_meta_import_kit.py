"""ketch_import_kit: every plugin imports httpx and keyring through it, and its stand-ins
change nothing but the time (the keyring backends keyring would choose stay the same)."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
LEAN = ("httpx", "keyring")


def _type_checking_only(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def test_plugins_import_httpx_and_keyring_through_the_kit() -> None:
    offenders = []
    for path in sorted(PLUGINS.rglob("*.py")):
        if path.parent.name == "ketch_import_kit":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            lean = isinstance(node, ast.Import) and any(a.name in LEAN for a in node.names)
            if lean and not _type_checking_only(node, parents):
                offenders.append(f"{path.relative_to(PLUGINS)}:{node.lineno}")
    assert offenders == [], f"import these through ketch_import_kit: {offenders}"


def _python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON_KEYRING")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip().splitlines()[-1]


def test_httpx_comes_without_its_command_line_client() -> None:
    code = (
        "import sys, json\n"
        "from ketch_import_kit.httpx import httpx\n"
        "r = httpx.Request('GET', 'http://127.0.0.1/x')\n"
        "try:\n"
        "    httpx.main()\n"
        "except SystemExit as e:\n"
        "    said = str(e)\n"
        "print(json.dumps({'loaded': sorted(m for m in ('rich', 'click', 'pygments') if m in sys.modules),"
        " 'url': str(r.url), 'said': said}))"
    )
    got = json.loads(_python(code))
    assert got["loaded"] == [] and got["url"] == "http://127.0.0.1/x"
    assert "run the `httpx` command" in got["said"]


def test_httpx_loaded_first_elsewhere_is_left_alone() -> None:
    code = (
        "import sys, httpx, json\n"
        "from ketch_import_kit.httpx import httpx as h\n"
        "print(json.dumps({'same': h is httpx, 'standin': hasattr(sys.modules['httpx._main'], '__ketch_standin__')}))"
    )
    assert json.loads(_python(code)) == {"same": True, "standin": False}


@pytest.mark.skipif(sys.platform == "darwin", reason="the stand-in applies off macOS only")
def test_keyring_chooses_among_the_same_backends() -> None:
    listing = (
        "import json, sys\n"
        "from keyring.backend import get_all_keyring\n"
        "from keyring.core import get_keyring\n"
        "names = sorted(f'{type(k).__module__}.{type(k).__name__}' for k in get_all_keyring())\n"
        "print(json.dumps({'all': names, 'chosen': type(get_keyring()).__name__,"
        " 'find_library': 'ctypes.util' in sys.modules}))"
    )
    plain = json.loads(_python("import keyring\n" + listing))
    lean = json.loads(_python("from ketch_import_kit.keyring import keyring\n" + listing))
    assert lean["all"] == plain["all"] and lean["chosen"] == plain["chosen"]
    assert not any("macOS" in name for name in plain["all"])  # unavailable off macOS either way
    assert plain["find_library"] and not lean["find_library"]  # what the stand-in saves
