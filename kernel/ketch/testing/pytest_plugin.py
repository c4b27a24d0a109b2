"""pytest fixtures for ketch plugin authors.

Installed with ketch as the pytest plugin ``ketch`` (entry point group ``pytest11``), so
a plugin's own test suite has them with nothing to import or configure; elsewhere use
``-p ketch.testing.pytest_plugin``.

* ``ketch_env``: config/state/cache dirs under tmp_path, only bundled plugins autoload;
* ``ketch_workspace``: an empty workspace directory;
* ``ketch_harness``: a factory, ``ketch_harness(script=[...], plugins=[...])`` -> Harness;
* ``ketch_cli``: runs the real ``ketch`` command in the workspace, optionally with a
  scripted model: ``ketch_cli("-p", "hi", "--provider", "scripted", script=[...])``;
* ``ketch_keyring``: a throwaway in-memory keyring installed for the test (keys set
  there never reach the real OS keyring);
* ``ketch_store``: the session store opened through the loaded store and encryption
  plugins, with a fresh throwaway data key in ``ketch_keyring``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ketch.testing.harness import Harness, isolated_env

if TYPE_CHECKING:  # pragma: no cover
    from ketch.storage import Store
    from ketch.testing.cli import CliResult
    from ketch.testing.keyring_backend import MemoryKeyring


@pytest.fixture
def ketch_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = isolated_env(tmp_path / "ketch-home")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


@pytest.fixture
def ketch_workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    return ws


@pytest.fixture
def ketch_harness(tmp_path: Path, ketch_env: dict[str, str]) -> Callable[..., Harness]:
    def make(**kwargs: Any) -> Harness:
        return Harness.create(tmp_path, **kwargs)

    return make


@pytest.fixture
def ketch_cli(
    tmp_path: Path, ketch_env: dict[str, str], ketch_workspace: Path
) -> Callable[..., CliResult]:
    """``ketch_cli(*args, script=None, env=None, input=None)`` -> CliResult (exit code,
    stdout, stderr, ``events`` from stream-json, ``requests`` the model received).

    The command runs in ``ketch_workspace`` with ``ketch_env``'s isolation. Only
    bundled plugins autoload, like everywhere in the kit: pass
    ``env={"KETCH_AUTOLOAD": "all"}`` to discover installed third-party plugins too.
    """
    from ketch.testing.cli import run_cli

    runs = iter(range(1_000_000))

    def run(
        *args: str,
        script: list[dict[str, Any]] | None = None,
        env: dict[str, str] | None = None,
        input: str | None = None,
        timeout: float = 60.0,
    ) -> CliResult:
        scratch = tmp_path / f"cli-{next(runs)}"
        return run_cli(
            list(args),
            cwd=ketch_workspace,
            env={**ketch_env, **(env or {})},
            script=script,
            input=input,
            timeout=timeout,
            scratch=scratch,
        )

    return run


@pytest.fixture
def ketch_keyring() -> Iterator[MemoryKeyring]:
    """A throwaway keyring for this test: ``keyring`` calls in this process use it."""
    import keyring

    from ketch.testing.keyring_backend import MemoryKeyring

    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def ketch_store(
    tmp_path: Path, ketch_env: dict[str, str], ketch_keyring: MemoryKeyring
) -> Iterator[Store]:
    """The session store, as the loaded plugins open it (bundled: ``store`` + ``crypto``),
    encrypted with a data key minted fresh in ``ketch_keyring``. It is the same
    database that harnesses from ``ketch_harness`` in this test save their sessions
    to, so a test can run a turn and then look at what was stored. Closed after."""
    from ketch.testing.harness import patched_environ

    harness = Harness.create(tmp_path)
    with patched_environ(
        {k: v for k, v in harness.environ.items() if k.startswith(("KETCH_", "XDG_"))}
    ):
        store = harness.kernel.store
    if store is None:
        pytest.fail(
            "no plugin opened a session store: is the 'store' plugin installed and enabled?"
        )
    try:
        yield store
    finally:
        store.close()
