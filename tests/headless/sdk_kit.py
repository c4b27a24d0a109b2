"""Driving ketch with Claude Code's own Agent SDKs (the real, pinned packages).

The SDK starts ``ketch-claude`` (its ``cli_path``) exactly as it starts ``claude``: with
the argv it builds, speaking stream-json and the control protocol on stdin/stdout. The
model is ketch's scripted provider, loaded in the subprocess through ``KETCH_LOAD``.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import Any

from tests.headless.headless_kit import SCRIPTED


def ketch_claude(scratch: Path) -> str:
    """The ``ketch-claude`` command of this environment (a wrapper calling the same entry
    point when the console script is not installed, e.g. an install predating it)."""
    beside = Path(sys.executable).parent / "ketch-claude"
    if beside.exists():
        return str(beside)
    found = shutil.which("ketch-claude")
    if found:
        return found
    wrapper = scratch / "ketch-claude"
    wrapper.write_text(
        f"#!{sys.executable}\nimport sys\nfrom ketch_headless.claude_entry import main\nsys.exit(main())\n",
        encoding="utf-8",
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return str(wrapper)


def sdk_env(scratch: Path, steps: list[dict[str, Any]]) -> dict[str, str]:
    """What the SDK adds to the CLI's environment: the scripted model, its log, and the
    provider chosen by the environment (ketch's config would choose it just as well)."""
    (scratch / "script.json").write_text(json.dumps(steps), encoding="utf-8")
    (scratch / "requests.jsonl").unlink(missing_ok=True)
    loads = [x for x in os.environ.get("KETCH_LOAD", "").split(",") if x.strip()]
    return {
        "KETCH_LOAD": ",".join([*loads, SCRIPTED]),
        "KETCH_SCRIPT": str(scratch / "script.json"),
        "KETCH_SCRIPT_LOG": str(scratch / "requests.jsonl"),
    }


def requests(scratch: Path) -> list[dict[str, Any]]:
    path = scratch / "requests.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def write_config(text: str) -> None:
    """The user config of the isolated test environment (scripted provider by default)."""
    config = Path(os.environ["KETCH_CONFIG_DIR"])
    config.mkdir(parents=True, exist_ok=True)
    base = 'default_provider = "scripted"\n[storage]\nencryption = "off"\n'
    (config / "config.toml").write_text(base + text, encoding="utf-8")
