"""A store that cannot be opened: the kernel keeps the reason and every later use shows it;
one notice per cause; ``--no-save`` opens nothing; the interactive shell asks."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import keyring
import pytest

from ketch.errors import KetchError
from ketch.storage import RecoveryLocked, StoreUnavailable
from ketch.testing import Harness, call, text
from ketch.testing.harness import patched_environ
from ketch.testing.keyring_backend import LockedKeyring
from tests.store.conftest import (
    STORE_PLUGINS,
    cli_env,
    db_path,
    logged_requests,
    run_ketch,
    state_dir,
)


def locked_harness(tmp_path: Path, script: list[dict[str, object]]) -> Harness:
    first = Harness.create(tmp_path, script=[text("saved")], bundled=[*STORE_PLUGINS, "policy"])
    first.run("one")
    first.kernel.end(first.session)
    first.kernel.store.close()  # type: ignore[union-attr]
    keyring.set_keyring(LockedKeyring())
    return Harness.create(tmp_path, script=script, bundled=[*STORE_PLUGINS, "policy"])


def test_the_reason_is_kept_and_shown_at_every_later_use(tmp_path: Path) -> None:
    from ketch_policy.approvals import remember_always

    h = locked_harness(tmp_path, [text("unsaved")])
    with patched_environ({k: v for k, v in h.environ.items() if k.startswith("KETCH_")}):
        with pytest.raises(RecoveryLocked, match="locked") as first:
            _ = h.kernel.store
        problem = h.kernel.hooks.first("store_problem", kernel=h.kernel)
        assert isinstance(problem, StoreUnavailable) and problem.exists
        with pytest.raises(
            RecoveryLocked
        ) as again:  # not None, not "is the 'store' plugin disabled?"
            _ = h.kernel.store
    assert again.value.message == first.value.message
    with pytest.raises(KetchError) as resumed:
        h.resume(None)
    assert (
        resumed.value.message.startswith("cannot resume: recovery-locked")
        and "disabled" not in resumed.value.message
    )
    end = h.run("two")
    assert end.stop_reason == "end_turn"
    notices = [e.message for e in h.of_type("notice")]
    assert len([n for n in notices if "locked" in n]) == 1, notices  # one notice for the one cause
    assert notices[0].startswith("this session is not being saved: recovery-locked")
    said = remember_always(h.session, "shell(git status)")
    assert (
        said is not None
        and "holds for this session only" in said
        and "locked" in said
        and "disabled" not in said
    )


def test_no_save_opens_nothing_and_writes_nothing(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    run = run_ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--no-save",
        cwd=workspace,
        env=cli_env(tmp_path, [text("unsaved")]),
    )
    assert run.returncode == 0 and run.stdout.strip() == "unsaved", run.stderr
    assert run.stderr.count("not being saved") == 1 and "--no-save" in run.stderr
    assert not state_dir().exists() or not any(state_dir().iterdir())
    assert not (tmp_path / "keyring.json").exists()  # no key minted either
    both = run_ketch(
        "-p",
        "hi",
        "--provider",
        "scripted",
        "--no-save",
        "--continue",
        cwd=workspace,
        env=cli_env(tmp_path, [text("x")]),
    )
    assert both.returncode == 2 and "nothing to resume" in both.stderr


def test_a_damaged_store_stops_a_headless_run_before_any_tool(tmp_path: Path) -> None:
    """The store opens while the first request is under way; when it cannot open where
    data exists, the turn stops before the tool the model asked for runs."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert (
        run_ketch(
            "-p",
            "hi",
            "--provider",
            "scripted",
            cwd=workspace,
            env=cli_env(tmp_path, [text("saved")]),
        ).returncode
        == 0
    )
    db_path().write_bytes(b"this is no database at all" * 200)
    for name in ("sessions.db-wal", "sessions.db-shm"):
        (state_dir() / name).unlink(missing_ok=True)
    before, sent = (
        hashlib.sha256(db_path().read_bytes()).hexdigest(),
        len(logged_requests(tmp_path)),
    )
    script = [call("touch", {"path": "made-by-the-tool"}), text("x")]
    run = run_ketch(
        "-p", "more", "--provider", "scripted", cwd=workspace, env=cli_env(tmp_path, script)
    )
    assert (
        run.returncode == 1
        and "cannot open the session store" in run.stderr
        and "before any tool ran" in run.stderr
        and "--no-save" in run.stderr
    )
    assert "Traceback" not in run.stderr
    assert not (workspace / "made-by-the-tool").exists()  # the tool never ran
    assert (
        len(logged_requests(tmp_path)) == sent + 1  # asked once, concurrently; never again
        and hashlib.sha256(db_path().read_bytes()).hexdigest() == before
    )
    listing = run_ketch("sessions", "list", cwd=workspace, env=cli_env(tmp_path))
    assert (
        listing.returncode == 1
        and "cannot open the session store" in listing.stderr
        and "Traceback" not in listing.stderr
    )


# --- the interactive shell ------------------------------------------------------------------


def _terminal(tmp_path: Path, name: str) -> object:
    from tests.interactive.interactive_kit import Terminal, needs_tmux  # noqa: F401

    return Terminal(
        tmp_path / name,
        script=[text("answered unsaved")],
        plugins="interactive,store,crypto,guards",
        home=tmp_path / "home",
    )


@pytest.mark.skipif(
    __import__("shutil").which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)
def test_the_shell_asks_before_running_unsaved(tmp_path: Path) -> None:
    from ketch.testing.harness import isolated_env

    home = tmp_path / "home"
    workspace = tmp_path / "first" / "ws"
    workspace.mkdir(parents=True)
    env = {
        **cli_env(tmp_path, [text("saved")]),
        **isolated_env(home),
        "KETCH_TEST_KEYRING_FILE": str(home / "keyring.json"),
    }
    assert run_ketch("-p", "keep", "--provider", "scripted", cwd=workspace, env=env).returncode == 0
    (home / "keyring.json").write_text("{}")  # recovery-locked from now on
    db = home / "state" / "sessions.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest()

    refuse = _terminal(tmp_path, "first")
    try:
        screen = refuse.wait_for("Continue without saving this session? [y/N]")  # type: ignore[attr-defined]
        assert "ketch: recovery-locked" in screen
        refuse.type("n")  # type: ignore[attr-defined]
        assert refuse.exit_code() == 1  # type: ignore[attr-defined]
    finally:
        refuse.close()  # type: ignore[attr-defined]

    accept = _terminal(tmp_path, "second")
    try:
        accept.wait_for("Continue without saving this session? [y/N]")  # type: ignore[attr-defined]
        accept.type("y")  # type: ignore[attr-defined]
        accept.ready()  # type: ignore[attr-defined]
        accept.type("hello")  # type: ignore[attr-defined]
        screen = accept.wait_for("answered unsaved")  # type: ignore[attr-defined]
        assert (
            screen.count("not being saved") == 1
            and "prompt history is kept in memory" not in screen
        )
        accept.keys("C-d")  # type: ignore[attr-defined]
        assert accept.exit_code() == 0  # type: ignore[attr-defined]
    finally:
        accept.close()  # type: ignore[attr-defined]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert json.loads((home / "keyring.json").read_text()) == {}
    assert os.path.exists(db)


@pytest.mark.skipif(
    __import__("shutil").which("tmux") is None, reason="tmux is not installed (.ci/run installs it)"
)
def test_the_shell_asks_for_the_passphrase_on_the_terminal(tmp_path: Path) -> None:
    """No keyring: the first run chooses a passphrase (typed twice); the next asks for it,
    a wrong one is named and asked again. Typed on the terminal, never echoed."""
    from tests.interactive.interactive_kit import Terminal

    home = tmp_path / "home"
    config = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    (home / "config").mkdir(parents=True)
    (home / "config" / "config.toml").write_text(
        "[storage]\nkey_cache_timeout = 0\n"
    )  # ask every time
    plugins = "interactive,store,crypto,guards"
    workspace = tmp_path / "ws"
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
    first = Terminal(
        tmp_path / "one",
        script=[text("first answer")],
        plugins=plugins,
        home=home,
        env=config,
        workspace=workspace,
    )
    try:
        screen = first.wait_for("Where should ketch keep the key")  # once the model is known
        assert "asked every time ketch starts" in screen  # no cache: key_cache_timeout = 0
        first.keys("2")  # the passphrase (the key file is recommended here)
        first.wait_for("New passphrase")
        first.type("short")
        first.wait_for("at least 8 characters")
        first.wait_for("New passphrase", count=2)  # asked again: echo is off again
        first.type("a terminal passphrase")
        first.wait_for("Type it again:")
        first.type("a terminal passphrase")
        first.ready()
        first.type("remember the terminal")
        screen = first.wait_for("first answer")
        assert "a terminal passphrase" not in screen and "not being saved" not in screen
        first.keys("C-d")
        assert first.exit_code() == 0
    finally:
        first.close()
    assert (home / "state" / "sessions.key").exists()

    second = Terminal(
        tmp_path / "two",
        script=[text("second answer")],
        plugins=plugins,
        home=home,
        env=config,
        args=("--continue",),
        workspace=workspace,
    )
    try:
        second.wait_for("Passphrase for ketch's saved sessions:")
        second.type("not it at all")
        second.wait_for("wrong passphrase; try again")
        second.type("a terminal passphrase")
        second.ready()
        second.type("and now?")
        screen = second.wait_for("second answer")
        assert "not it at all" not in screen and "a terminal passphrase" not in screen
        second.keys("C-d")
        assert second.exit_code() == 0
    finally:
        second.close()
    sent = [
        json.loads(line) for line in (tmp_path / "two" / "requests.jsonl").read_text().splitlines()
    ][-1]["messages"]
    assert [p["text"] for m in sent if m["role"] == "user" for p in m["parts"]] == [
        "remember the terminal",
        "and now?",
    ]
