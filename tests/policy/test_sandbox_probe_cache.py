"""The bwrap probe's success is kept while the binary, the kernel and the user
namespace settings are the same, and tried again when any of them changes; a failure
is never kept. Each probe runs a real bwrap through a wrapper script that notes runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from ketch_sandbox import probe_cache
from ketch_sandbox.bwrap import probe

REAL = shutil.which("bwrap")
needs_bwrap = pytest.mark.skipif(
    REAL is None or not probe(REAL).available, reason="no working bwrap here"
)


def wrapper(tmp_path: Path, *, fail: bool = False) -> tuple[Path, Path]:
    log = tmp_path / "runs.log"
    script = tmp_path / "bin" / "bwrap"
    script.parent.mkdir(exist_ok=True)
    body = (
        "echo 'bwrap: No permissions to creating new namespace' >&2; exit 1"
        if fail
        else f'exec {REAL} "$@"'
    )
    script.write_text(f"#!/bin/sh\necho run >> {log}\n{body}\n")
    script.chmod(0o755)
    return script, log


def runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


@needs_bwrap
def test_a_success_is_kept_until_the_binary_changes(tmp_path: Path) -> None:
    script, log = wrapper(tmp_path)
    assert probe(str(script)).available and runs(log) == 1
    assert probe(str(script)).available and runs(log) == 1  # kept: bwrap did not run
    script.write_text(script.read_text() + "# upgraded\n")  # another binary
    assert probe(str(script)).available and runs(log) == 2
    assert probe(str(script)).available and runs(log) == 2


@needs_bwrap
def test_the_key_follows_the_kernel_and_its_namespace_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, log = wrapper(tmp_path)
    assert probe(str(script)).available and runs(log) == 1
    real_uname = os.uname
    monkeypatch.setattr(
        probe_cache.os, "uname", lambda: (*real_uname()[:2], "9.9.9-other", *real_uname()[3:])
    )
    assert probe(str(script)).available and runs(log) == 2  # another kernel: tried again
    monkeypatch.setattr(probe_cache, "_SYSCTLS", (str(tmp_path / "userns"),))
    (tmp_path / "userns").write_text("0\n")
    assert probe(str(script)).available and runs(log) == 3  # another setting: again


def test_a_failure_is_never_kept(tmp_path: Path) -> None:
    script, log = wrapper(tmp_path, fail=True)
    first = probe(str(script))
    assert not first.available and "No permissions" in first.reason
    assert not probe(str(script)).available and runs(log) == 2
    assert not (Path(os.environ["KETCH_CACHE_DIR"]) / probe_cache.FILE).exists()
