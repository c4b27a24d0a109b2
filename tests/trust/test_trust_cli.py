"""``ketch trust`` through the real command line: list, trust, revoke, another folder,
and bad input (a missing folder, a broken pin file) as one line, never a traceback."""

from __future__ import annotations

from pathlib import Path

from ketch.testing import isolated_env
from ketch.testing.cli import CliResult, run_cli


def _ketch(root: Path, ws: Path, *args: str) -> CliResult:
    return run_cli(list(args), cwd=ws, env={**isolated_env(root), "HOME": str(root)})


def _workspace(root: Path) -> Path:
    ws = root / "proj"
    (ws / ".ketch").mkdir(parents=True)
    (ws / ".ketch" / "config.toml").write_text(
        'profile = "assisted"\n[permissions]\nallow = ["shell(make test:*)"]\n'
        '[[hooks.Stop]]\ncommand = "./check.sh"\n'
    )
    return ws


def test_trust_list_revoke_and_another_folder(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    listed = _ketch(tmp_path, ws, "trust", "--list")
    assert listed.returncode == 0 and "no workspace has trusted items" in listed.stderr
    shown = _ketch(tmp_path, elsewhere, "trust", str(ws))  # another folder, by path
    assert shown.returncode == 1
    assert "permissions.allow: shell(make test:*)" in shown.stdout
    assert (
        "on Stop (matcher *): ./check.sh" in shown.stdout
        and "files: check.sh (missing)" in shown.stdout
    )
    assert _ketch(tmp_path, elsewhere, "trust", "--yes", str(ws)).returncode == 0
    listed = _ketch(tmp_path, ws, "trust", "--list")
    assert listed.stdout.strip() == f"{ws.resolve()}  (3 pinned items)"
    again = _ketch(tmp_path, ws, "trust")
    assert again.returncode == 0 and "all 3 item(s) are trusted" in again.stdout
    # The hook's script appears: the hook is a changed item now.
    (ws / "check.sh").write_text("#!/bin/sh\n")
    changed = _ketch(tmp_path, ws, "trust")
    assert changed.returncode == 1 and "changed  hook Stop #1" in changed.stdout
    revoked = _ketch(tmp_path, ws, "trust", "--revoke")
    assert revoked.returncode == 0 and "pin(s) withdrawn" in revoked.stdout
    assert "no workspace has trusted items" in _ketch(tmp_path, ws, "trust", "--list").stderr


def test_bad_input_is_one_line(tmp_path: Path) -> None:
    ws = _workspace(tmp_path)
    missing = _ketch(tmp_path, ws, "trust", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "is not a directory" in missing.stderr
    pins = Path(isolated_env(tmp_path)["KETCH_CONFIG_DIR"]) / "trust.json"
    pins.parent.mkdir(parents=True, exist_ok=True)
    pins.write_text("{ broken")
    broken = _ketch(tmp_path, ws, "trust", "--yes")
    assert broken.returncode == 1 and "trust.json: not valid JSON" in broken.stderr
    for result in (missing, broken):
        assert "Traceback" not in result.stderr
