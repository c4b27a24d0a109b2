"""typescript-language-server (from npm; .ci/run installs it where node is available):
a type error after an edit, and a definition across two files."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from ketch.testing import Harness, call, text
from tests.lsp.kit import PASSPHRASE, PLUGINS, results


def _server() -> str:
    if not shutil.which("node"):
        pytest.skip("node is not installed, so typescript-language-server cannot run")
    from ketch_lsp.servers import find_program

    found = find_program("typescript-language-server", Path("/nonexistent"), dict(os.environ))
    if found is None:
        pytest.skip(
            "typescript-language-server is not installed (.ci/run installs it from npm "
            "into ketch's environment where node is available)"
        )
    return found[0]


def test_typescript_diagnostics_and_definition(tmp_path: Path) -> None:
    _server()
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "tsconfig.json").write_text(
        '{"compilerOptions": {"strict": true}, "include": ["*.ts"]}\n'
    )
    (ws / "lib.ts").write_text("export function twice(n: number): number {\n  return n * 2;\n}\n")
    (ws / "main.ts").write_text('import { twice } from "./lib";\n\nconst x: number = twice(2);\n')
    script = [
        call("read_file", {"path": "main.ts"}),
        call(
            "edit_file",
            {"path": "main.ts", "old_string": "twice(2)", "new_string": 'twice("two")'},
        ),
        call("definition", {"path": "main.ts", "line": 3, "symbol": "twice"}),
        text("done"),
    ]
    harness = Harness.create(
        tmp_path,
        script=script,
        bundled=PLUGINS,
        config="[lsp]\ndiagnostics_timeout = 45\nstart_timeout = 60\nrequest_timeout = 45\n",
        settings={"profile": "full-access"},
        env={"KETCH_PASSPHRASE": PASSPHRASE},
    )
    assert asyncio.run(harness.turn("edit")).stop_reason == "end_turn"
    harness.kernel.end(harness.session)
    edit = results(harness.events, "edit_file")[0]
    assert "[lsp] 1 new problem in main.ts after this change:" in edit.output, edit.output
    assert "main.ts:3:25: error: Argument of type 'string' is not assignable" in edit.output
    definition = results(harness.events, "definition")[0]
    assert definition.ok, definition.output
    assert definition.output.splitlines()[0].startswith("lib.ts:1:17: export function twice")
