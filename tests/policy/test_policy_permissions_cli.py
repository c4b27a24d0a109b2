"""``ketch permissions list|revoke`` through the real command line. (Trust by content,
which used to live here, is the trust plugin's: tests/trust.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _ketch(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ketch", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "KETCH_PLUGINS": "policy,store", **env},
    )


def test_cli_permissions_list_and_revoke(tmp_path: Path) -> None:
    ws = tmp_path / "proj"
    ws.mkdir()
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    (config / "config.toml").write_text(
        '[storage]\nencryption = "off"\n[permissions]\nallow = ["shell(git status:*)"]\ndeny = ["web(evil.example"]\n'
    )
    from ketch.kernel import Kernel

    kernel = Kernel.boot(workspace=ws)
    assert kernel.store is not None
    kernel.store.add_approval(str(ws.resolve()), "shell(make test:*)")
    kernel.store.close()
    listed = _ketch(["permissions", "list"], ws)
    assert listed.returncode == 0, listed.stderr
    assert "allow rules (config): shell(git status:*)" in listed.stdout
    assert (
        "error: [permissions] deny[0]: 'web(evil.example': missing the closing ')'" in listed.stdout
    )
    assert "  1. shell(make test:*)" in listed.stdout
    bad = _ketch(["permissions", "revoke", "7"], ws)
    assert bad.returncode == 1 and "no approval '7'" in bad.stderr
    done = _ketch(["permissions", "revoke", "shell(make test:*)"], ws)
    assert done.returncode == 0 and "revoked: shell(make test:*)" in done.stdout
    assert "always-allow approvals for" in _ketch(["permissions", "list"], ws).stdout
    assert "  1." not in _ketch(["permissions", "list"], ws).stdout
