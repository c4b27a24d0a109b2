"""Resuming restores knowledge, never authority (needs the store, so not in the minimal build)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.kernel.test_kernel_cli import ketch, scripted_env


def test_resume_starts_manual_unless_the_flag_is_given_now(tmp_path: Path) -> None:
    config_dir = Path(os.environ["KETCH_CONFIG_DIR"])
    config_dir.mkdir(parents=True, exist_ok=True)
    (config_dir / "config.toml").write_text(
        'profile = "full-access"\n[storage]\nencryption = "off"\n'
    )
    env = scripted_env(tmp_path, [{"text": "one"}, {"text": "two"}, {"text": "three"}])
    first = ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        cwd=tmp_path,
        env=env,
    )
    assert json.loads(first.stdout.splitlines()[0])["profile"] == "full-access"
    resumed = ketch(
        "-p",
        "again",
        "--continue",
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        cwd=tmp_path,
        env=env,
    )
    session = json.loads(resumed.stdout.splitlines()[0])
    assert (
        session["resumed"] is True and session["profile"] == "manual"
    )  # config's full-access is not restored
    flagged = ketch(
        "-p",
        "more",
        "--continue",
        "--profile",
        "assisted",
        "--provider",
        "scripted",
        "--output-format",
        "stream-json",
        cwd=tmp_path,
        env=env,
    )
    assert (
        json.loads(flagged.stdout.splitlines()[0])["profile"] == "assisted"
    )  # an explicit choice made now
