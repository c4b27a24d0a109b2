"""Credentials: the keyring hook, the kernel's resolution order, and ``ketch auth``.

In-process tests set a backend with keyring's own API (``keyring.set_keyring``, the kit's
throwaway backends); CLI subprocesses choose one with ``PYTHON_KEYRING_BACKEND``. Tests
against a real Secret Service are marked ``keyring`` and run only with
``KETCH_TEST_SECRET_SERVICE=1``.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.core
import pytest
from keyring.backend import KeyringBackend

from ketch.providers import ProviderConfig
from ketch.testing import Harness
from ketch.testing.keyring_backend import LockedKeyring, MemoryKeyring
from ketch_keyring.store import SERVICE, CredentialStoreError, delete_key, get_key, set_key

from .kit import PATHS
from .loopback import LoopbackServer, Reply
from .recordings import recordings
from .test_providers_cli import ketch

KEY = "sk-test-" + "4" * 24
FILE_BACKEND = "ketch.testing.keyring_backend.FileKeyring"
LOCKED_BACKEND = "ketch.testing.keyring_backend.LockedKeyring"


class TripwireKeyring(KeyringBackend):
    """Records any use: for checks that the keyring is not consulted at all."""

    priority = -1  # type: ignore[assignment]  # never chosen or chained automatically
    touched: list[str] = []

    def get_password(self, service: str, username: str) -> str | None:
        TripwireKeyring.touched.append(username)
        return None

    def set_password(self, service: str, username: str, password: str) -> None:
        TripwireKeyring.touched.append(username)

    def delete_password(self, service: str, username: str) -> None:
        TripwireKeyring.touched.append(username)


@pytest.fixture
def memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryKeyring]:
    backend = MemoryKeyring()
    use(backend, monkeypatch)
    yield backend


def use(backend: object, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    keyring.set_keyring(backend)  # type: ignore[arg-type]


def kernel_with_keyring(
    tmp_path: Path, environ: dict[str, str] | None = None, config: str | None = None
) -> Harness:
    harness = Harness.create(
        tmp_path, bundled=["keyring", "openai", "anthropic", "ollama"], env=environ, config=config
    )
    harness.kernel.configure()
    return harness


# --- the hook and the resolution order ------------------------------------------------------------


def test_store_round_trip(memory: MemoryKeyring) -> None:
    assert get_key("openai") is None
    set_key("openai", KEY)
    assert get_key("openai") == KEY
    assert memory.values == {(SERVICE, "openai"): KEY}
    assert delete_key("openai") is True and delete_key("openai") is False


def test_resolution_order_env_then_keyring(tmp_path: Path, memory: MemoryKeyring) -> None:
    set_key("openai", KEY)
    set_key("work", "sk-work-key-000")
    kernel = kernel_with_keyring(
        tmp_path / "a", environ={"OPENAI_API_KEY": "sk-from-env-0000"}
    ).kernel
    kinds = kernel.provider_kinds
    openai = ProviderConfig(name="openai", kind="openai")
    assert (
        kernel.api_key(openai, kinds["openai"]).reveal() == "sk-from-env-0000"
    )  # env beats keyring
    clean = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    kernel = Harness.create(tmp_path / "b", bundled=["keyring", "openai"], env={}).kernel
    kernel.environ = clean
    kernel.configure()
    assert kernel.api_key(openai, kinds["openai"]).reveal() == KEY  # then the keyring
    work = ProviderConfig(name="work", kind="openai", api_key_env="WORK_KEY")
    assert kernel.api_key(work, kinds["openai"]).reveal() == "sk-work-key-000"
    kernel.environ = {**clean, "WORK_KEY": "sk-work-env-111"}
    assert kernel.api_key(work, kinds["openai"]).reveal() == "sk-work-env-111"  # api_key_env first


def test_a_locked_keyring_is_a_notice_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(LockedKeyring(), monkeypatch)
    kernel = kernel_with_keyring(tmp_path).kernel
    assert (
        kernel.hooks.first(
            "ketch_get_credential", provider="anthropic", kind="anthropic", kernel=kernel
        )
        is None
    )
    (notice,) = [n for n in kernel.notices if "keyring" in n]
    assert "locked" in notice and "anthropic" in notice and "\n" not in notice


def test_no_keyring_at_all_is_silently_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from keyring.backends import fail

    use(fail.Keyring(), monkeypatch)
    kernel = kernel_with_keyring(tmp_path).kernel
    assert (
        kernel.hooks.first("ketch_get_credential", provider="openai", kind="openai", kernel=kernel)
        is None
    )
    assert not [n for n in kernel.notices if "keyring" in n]
    with pytest.raises(CredentialStoreError) as raised:
        set_key("openai", KEY)
    assert "no OS keyring is available" in raised.value.message


def test_a_kind_that_needs_no_key_never_touches_the_keyring(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use(TripwireKeyring(), monkeypatch)
    TripwireKeyring.touched.clear()
    kernel = kernel_with_keyring(tmp_path).kernel
    assert (
        kernel.hooks.first("ketch_get_credential", provider="ollama", kind="ollama", kernel=kernel)
        is None
    )
    # The kind's registration says so (``needs_key=False``), not its name: the
    # scripted kind of the testing kit is asked the same way.
    assert kernel.provider_kinds["scripted"].needs_key is False
    assert (
        kernel.hooks.first("ketch_get_credential", provider="local", kind="scripted", kernel=kernel)
        is None
    )
    assert TripwireKeyring.touched == []


# --- ketch auth (subprocess) -------------------------------------------------------------------------


def file_env(path: Path, **extra: str) -> dict[str, str]:
    return {"PYTHON_KEYRING_BACKEND": FILE_BACKEND, "KETCH_TEST_KEYRING_FILE": str(path), **extra}


def test_auth_set_status_use_delete(tmp_path: Path, server: LoopbackServer) -> None:
    store = tmp_path / "keys.json"
    env = file_env(store)
    done = ketch(tmp_path, "auth", "set", "openai", env=env, stdin=KEY + "\n")
    assert done.returncode == 0, done.stderr
    assert "stored the API key for 'openai'" in done.stdout and KEY not in done.stdout + done.stderr
    assert json.loads(store.read_text()) == {"ketch\x00openai": KEY}

    status = ketch(tmp_path, "auth", "status", env={**env, "ANTHROPIC_API_KEY": "sk-ant-env-999"})
    assert status.returncode == 0, status.stderr
    rows = {line.split()[0]: line.split(None, 1)[1] for line in status.stdout.splitlines()}
    assert rows["openai"].startswith("keyring (")
    assert rows["anthropic"] == "environment (ANTHROPIC_API_KEY)"
    assert rows["ollama"] == "no key needed"
    assert (
        rows["openai-responses"]
        == "none: set OPENAI_API_KEY or run `ketch auth set openai-responses`"
    )
    assert KEY not in status.stdout and "sk-ant-env-999" not in status.stdout

    rec = recordings("openai")
    server.queue(PATHS["openai"], Reply(chunks=[rec["streams"]["plain"]]))
    turn = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        "openai",
        "--model",
        "m",
        env={**env, "OPENAI_BASE_URL": f"{server.url}/v1"},
    )
    assert turn.returncode == 0, turn.stderr
    assert (
        server.requests[-1].headers["authorization"] == f"Bearer {KEY}"
    )  # the keyring's key was used
    assert KEY not in turn.stdout + turn.stderr

    assert ketch(tmp_path, "auth", "delete", "openai", env=env).returncode == 0
    again = ketch(tmp_path, "auth", "delete", "openai", env=env)
    assert again.returncode == 1 and "no API key is stored for 'openai'" in again.stderr


def test_auth_set_notes_env_precedence_and_unknown_providers(tmp_path: Path) -> None:
    env = file_env(tmp_path / "keys.json", OPENAI_API_KEY="sk-env-1234")
    done = ketch(tmp_path, "auth", "set", "openai", env=env, stdin=KEY)
    assert "OPENAI_API_KEY is set in the environment and takes precedence" in done.stdout
    other = ketch(tmp_path, "auth", "set", "mystery", env=env, stdin=KEY)
    assert other.returncode == 0 and "no provider 'mystery' is configured yet" in other.stdout


@pytest.mark.parametrize(
    ("backend", "stdin", "args", "code", "expected"),
    [
        (
            "keyring.backends.fail.Keyring",
            KEY,
            ["auth", "set", "openai"],
            1,
            "no OS keyring is available",
        ),
        (LOCKED_BACKEND, KEY, ["auth", "set", "openai"], 1, "the OS keyring is locked"),
        (LOCKED_BACKEND, "", ["auth", "delete", "openai"], 1, "the OS keyring is locked"),
        (
            "no_such_module.Backend",
            KEY,
            ["auth", "set", "openai"],
            1,
            "check PYTHON_KEYRING_BACKEND",
        ),
        (FILE_BACKEND, "", ["auth", "set", "openai"], 1, "no key given; nothing stored"),
        (FILE_BACKEND, "sk bad key", ["auth", "set", "openai"], 1, "spaces or line breaks"),
        (FILE_BACKEND, KEY, ["auth", "set", "../etc"], 2, "is not a provider name"),
    ],
)
def test_auth_failures_are_one_clear_line(
    tmp_path: Path, backend: str, stdin: str, args: list[str], code: int, expected: str
) -> None:
    done = ketch(
        tmp_path,
        *args,
        env={**file_env(tmp_path / "k.json"), "PYTHON_KEYRING_BACKEND": backend},
        stdin=stdin,
    )
    assert done.returncode == code
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr and KEY not in done.stderr


def test_auth_status_with_a_locked_keyring_still_shows_the_environment(tmp_path: Path) -> None:
    done = ketch(
        tmp_path,
        "auth",
        "status",
        env={"PYTHON_KEYRING_BACKEND": LOCKED_BACKEND, "OPENAI_API_KEY": "sk-x-1234"},
    )
    assert done.returncode == 1
    assert (
        "environment (OPENAI_API_KEY)" in done.stdout
        and "unknown (keyring unavailable)" in done.stdout
    )
    assert (
        done.stderr.strip().startswith("ketch: the OS keyring is locked")
        and done.stderr.count("\n") == 1
    )


def test_a_locked_keyring_during_a_turn_is_a_notice_and_the_missing_key_message(
    tmp_path: Path,
) -> None:
    done = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        "anthropic",
        "--model",
        "claude-sonnet-4-5",
        "--output-format",
        "stream-json",
        env={"PYTHON_KEYRING_BACKEND": LOCKED_BACKEND},
    )
    assert done.returncode == 1
    events = [json.loads(line) for line in done.stdout.splitlines()]
    notices = [e["message"] for e in events if e["type"] == "notice"]
    assert any("keyring is locked" in n for n in notices)
    (error,) = [e for e in events if e["type"] == "error"]
    assert error["kind"] == "auth" and "ketch auth set anthropic" in error["message"]


def test_auth_set_prompts_without_echo_on_a_terminal(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    store = tmp_path / "keys.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env.update(file_env(store), KETCH_PLUGINS="openai,anthropic,ollama,headless,keyring")
    (tmp_path / "ws").mkdir()
    child = pexpect.spawn(
        sys.executable,
        ["-m", "ketch", "auth", "set", "anthropic"],
        env=env,
        cwd=str(tmp_path / "ws"),
        encoding="utf-8",
        timeout=30,
        use_poll=True,  # fds past 1024 in a long test process
    )
    child.expect("API key for anthropic")
    child.sendline(KEY)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert KEY not in (child.before or "")  # not echoed, not printed
    assert json.loads(store.read_text()) == {"ketch\x00anthropic": KEY}


# --- a real Secret Service -------------------------------------------------------------------------------

secret_service = pytest.mark.skipif(
    os.environ.get("KETCH_TEST_SECRET_SERVICE") != "1",
    reason="needs a Secret Service (KETCH_TEST_SECRET_SERVICE=1, see .ci/run)",
)


@pytest.mark.keyring
@secret_service
def test_secret_service_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyring.core, "_keyring_backend", None)
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    name = f"ketch-test-{uuid.uuid4().hex[:8]}"
    try:
        set_key(name, KEY)
        assert get_key(name) == KEY
        from keyring.backends import SecretService

        assert (
            SecretService.Keyring().get_password(SERVICE, name) == KEY
        )  # really in the Secret Service
    finally:
        delete_key(name)
    assert get_key(name) is None


@pytest.mark.keyring
@secret_service
def test_secret_service_through_the_cli(tmp_path: Path) -> None:
    name = f"ketch-cli-{uuid.uuid4().hex[:8]}"
    env = {"PYTHON_KEYRING_BACKEND": "keyring.backends.SecretService.Keyring"}
    try:
        done = ketch(tmp_path, "auth", "set", name, env=env, stdin=KEY)
        assert done.returncode == 0, done.stderr
        status = ketch(tmp_path, "auth", "status", env=env, stdin="")
        assert KEY not in status.stdout
    finally:
        deleted = ketch(tmp_path, "auth", "delete", name, env=env)
    assert deleted.returncode == 0, deleted.stderr


def test_auth_status_without_any_keyring_points_to_the_environment(tmp_path: Path) -> None:
    done = ketch(
        tmp_path, "auth", "status", env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}
    )
    assert done.returncode == 1
    assert "openai            none: set OPENAI_API_KEY (no OS keyring here)" in done.stdout
    assert done.stderr.count("\n") == 1 and "no OS keyring is available" in done.stderr


def test_auth_set_gemini_needs_no_keyring_change_and_the_key_is_used(
    tmp_path: Path, server: LoopbackServer
) -> None:
    """A new provider kind works with ``ketch auth`` as it registers: no keyring plugin edit."""
    env = file_env(tmp_path / "keys.json")
    done = ketch(tmp_path, "auth", "set", "gemini", env=env, stdin=KEY + "\n")
    assert done.returncode == 0 and "stored the API key for 'gemini'" in done.stdout, done.stderr
    rows = {
        line.split()[0]: line.split(None, 1)[1]
        for line in ketch(tmp_path, "auth", "status", env=env).stdout.splitlines()
    }
    assert rows["gemini"].startswith("keyring (")
    rec = recordings("gemini")
    server.queue(PATHS["gemini"], Reply(chunks=[rec["streams"]["plain"]]))
    turn = ketch(
        tmp_path,
        "-p",
        "hi",
        "--provider",
        "gemini",
        "--model",
        "gemini-2.5-flash",
        env={**env, "GEMINI_BASE_URL": server.url},
    )
    assert turn.returncode == 0, turn.stderr
    assert (
        server.requests[-1].headers["x-goog-api-key"] == KEY
        and KEY not in turn.stdout + turn.stderr
    )


def test_auth_set_without_a_keyring_says_which_variable_to_export(tmp_path: Path) -> None:
    # Issue 26 item 9: without a keyring the next 401 suggested `ketch auth set`, which
    # then failed without saying what would work instead.
    done = ketch(
        tmp_path,
        "auth",
        "set",
        "openai",
        env={"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"},
        stdin=KEY + "\n",
    )
    assert done.returncode == 1 and KEY not in done.stdout + done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "export OPENAI_API_KEY=..." in line and "shell profile" in line
