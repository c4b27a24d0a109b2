"""The sandbox's tree index never misses a secret, socket or .git, however the tree changes.

The index is kept up to date by inotify (or by stat, where inotify is unavailable) so
that a large repository costs nothing per command; a stale index would leave a new
secret unmasked or a new socket reachable. So after every one of a few hundred random
changes -- files and secret-looking files made, sockets and FIFOs bound, directories
made, renamed within, out of and into the tree, replaced, removed -- both kinds of
index must agree exactly with a fresh walk.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
from pathlib import Path

import pytest

from ketch_sandbox.trees import TreeIndex

NAMES = [
    "a",
    "b",
    "src",
    ".env",
    "id_rsa",
    "key.pem",
    "notes.txt",
    ".git",
    ".ketch",
    ".ssh",
    "main.py",
]


def fresh(root: Path) -> tuple[object, ...]:
    found = TreeIndex(root, watch=False).refresh()
    return found.secrets, found.sockets, found.git, found.ketch


def seen(index: TreeIndex) -> tuple[object, ...]:
    found = index.refresh()
    return found.secrets, found.sockets, found.git, found.ketch


def dirs_of(root: Path) -> list[Path]:
    return [Path(d) for d, _, _ in os.walk(root)]


def step(rng: random.Random, root: Path, outside: Path, sockets: list[socket.socket]) -> str:
    here = rng.choice(dirs_of(root))
    name = rng.choice(NAMES) + (str(rng.randrange(3)) if rng.random() < 0.3 else "")
    target = here / name
    action = rng.choice(
        [
            "file",
            "file",
            "dir",
            "dir",
            "socket",
            "fifo",
            "rename",
            "move-out",
            "move-in",
            "replace",
            "remove",
        ]
    )
    if target.exists() or target.is_symlink():
        action = rng.choice(["rename", "remove", "replace", "move-out"])
    if action == "file":
        target.write_text("x")
    elif action == "dir":
        target.mkdir()
    elif action == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(target)) if len(str(target)) < 100 else target.write_text("x")
        sockets.append(sock)
    elif action == "fifo":
        os.mkfifo(target)
    else:
        entries = [p for p in here.iterdir()]
        if not entries:
            return "nothing to change"
        victim = rng.choice(entries)
        if action == "rename":
            destination = rng.choice(dirs_of(root)) / (rng.choice(NAMES) + "r")
            try:
                victim.rename(destination)
            except OSError:  # into itself, or onto a directory that is not empty
                return "rename refused"
        elif action == "move-out":
            victim.rename(outside / f"out{rng.randrange(10**9)}")
        elif action == "move-in":
            parked = [p for p in outside.iterdir()]
            if parked:
                try:
                    rng.choice(parked).rename(here / (rng.choice(NAMES) + "m"))
                except OSError:  # onto something of another kind, or not empty
                    return "move-in refused"
        elif action == "replace" and victim.is_dir() and not victim.is_symlink():
            shutil.rmtree(victim)
            victim.mkdir()
            (victim / ".env").write_text("new secret")
        elif victim.is_dir() and not victim.is_symlink():
            shutil.rmtree(victim)
        else:
            victim.unlink()
    return f"{action} {target.relative_to(root)}"


@pytest.mark.parametrize(
    "seed", [8, 20261201, 77]
)  # 8 once found a directory made again under its old name
def test_the_index_agrees_with_a_fresh_walk_after_every_change(tmp_path: Path, seed: int) -> None:
    root, outside = tmp_path / "tree", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    watched, statted = TreeIndex(root), TreeIndex(root, watch=False)
    assert watched.watching
    sockets: list[socket.socket] = []
    rng = random.Random(seed)
    try:
        for number in range(400):
            what = step(rng, root, outside, sockets)
            expected = fresh(root)
            assert seen(watched) == expected, f"inotify index, step {number}: {what}"
            assert seen(statted) == expected, f"stat index, step {number}: {what}"
        assert any(expected), "the random changes made nothing worth finding"
    finally:
        for sock in sockets:
            sock.close()
        watched.close()


def test_a_settled_index_costs_nothing_and_still_sees_the_next_change(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    (root / "deep" / "er").mkdir(parents=True)
    index = TreeIndex(root)
    index.refresh()
    index.refresh()
    assert index.relisted == 0 or index.relisted <= 3
    before = index.refresh()
    assert index.relisted == 0 and before.secrets == ()
    (root / "deep" / "er" / ".env").write_text("k")
    after = index.refresh()
    assert after.secrets == (root / "deep" / "er" / ".env",) and index.relisted == 1
    index.close()
