"""The tree ids receipts name are git's own: computed in Python from ``git ls-tree`` and
the files as they are (nothing written to the repository), they equal what ``git
write-tree`` records after ``git add`` -- for names git sorts specially, links,
executable bits, removals, new directories, a workspace below the repository's top,
names that are not UTF-8, and SHA-256 repositories."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from ketch_attest import gitrepo
from tests.attest.kit import GIT, needs_git

pytestmark = needs_git


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        [*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def _repo(tmp_path: Path, *init: str) -> Path:
    top = tmp_path / "repo"
    top.mkdir()
    done = subprocess.run(["git", "init", "-q", *init, str(top)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"git init {' '.join(init)} is not supported here")
    for rel, data in {
        "a/x.txt": b"x\n",
        "a-b": b"file sorting after the a/ tree\n",
        "a.txt": b"file sorting before it\n",
        "run.sh": b"#!/bin/sh\n",
        "keep/one.py": b"1\n",
        "gone.txt": b"to be removed\n",
        "sub/ws/inner.txt": b"inside a nested workspace\n",
    }.items():
        path = top / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (top / "run.sh").chmod(0o755)
    os.symlink("a.txt", top / "link")
    _git(top, "add", "-A")
    _git(top, "commit", "-qm", "base")
    return top


def _git_tree_after_add(top: Path) -> str:
    _git(top, "add", "-A")
    return _git(top, "write-tree")


def _change(top: Path) -> list[str]:
    """Every kind of change; returns the changed paths (relative to ``top``)."""
    (top / "a" / "x.txt").write_bytes(b"changed\n")
    (top / "a" / "y.txt").write_bytes(b"new in an existing tree\n")
    (top / "new" / "deep").mkdir(parents=True)
    (top / "new" / "deep" / "z.txt").write_bytes(b"new tree\n")
    (top / "gone.txt").unlink()
    (top / "keep" / "one.py").chmod(0o755)
    (top / "link").unlink()
    os.symlink("a-b", top / "link")
    (top / "run.sh").chmod(0o644)
    odd = os.fsdecode(b"caf\xe9.txt")  # not UTF-8
    (top / odd).write_bytes(b"latin-1 name\n")
    return [
        "a/x.txt",
        "a/y.txt",
        "new/deep/z.txt",
        "gone.txt",
        "keep/one.py",
        "link",
        "run.sh",
        odd,
    ]


@pytest.mark.parametrize("init", [(), ("--object-format=sha256",)], ids=["sha1", "sha256"])
def test_overlay_tree_is_what_git_records(tmp_path: Path, init: tuple[str, ...]) -> None:
    top = _repo(tmp_path, *init)
    head = _git(top, "rev-parse", "HEAD")
    changed = _change(top)
    repo = gitrepo.find(top)
    assert repo is not None and repo.algorithm == ("sha256" if init else "sha1")
    objects = sorted(p.name for p in (top / ".git" / "objects").rglob("*"))
    computed = gitrepo.overlay_tree(repo, head, top, changed)
    assert (
        sorted(p.name for p in (top / ".git" / "objects").rglob("*")) == objects
    )  # nothing written
    assert computed == _git_tree_after_add(top)
    # Unchanged: the commit's own tree.
    assert gitrepo.overlay_tree(repo, _git(top, "rev-parse", "HEAD"), top, []) == _git(
        top, "rev-parse", "HEAD^{tree}"
    )


def test_a_workspace_below_the_top_names_its_paths_relative_to_itself(tmp_path: Path) -> None:
    top = _repo(tmp_path)
    ws = top / "sub" / "ws"
    (ws / "inner.txt").write_bytes(b"edited\n")
    (ws / "added.txt").write_bytes(b"added\n")
    repo = gitrepo.find(ws)
    assert repo is not None and repo.prefix == "sub/ws"
    computed = gitrepo.overlay_tree(
        repo, _git(top, "rev-parse", "HEAD"), ws, ["inner.txt", "added.txt"]
    )
    assert computed == _git_tree_after_add(top)


def test_a_repository_without_commits_starts_from_nothing(tmp_path: Path) -> None:
    top = tmp_path / "empty"
    subprocess.run(["git", "init", "-q", str(top)], check=True)
    (top / "only.txt").write_bytes(b"1\n")
    repo = gitrepo.find(top)
    assert repo is not None and gitrepo.resolve(repo, "HEAD^{commit}") is None
    assert gitrepo.overlay_tree(repo, None, top, ["only.txt"]) == _git_tree_after_add(top)


def test_not_a_repository(tmp_path: Path) -> None:
    assert gitrepo.find(tmp_path) is None


def test_replace_refs_do_not_change_what_a_tree_id_means(tmp_path: Path) -> None:
    top = _repo(tmp_path)
    head = _git(top, "rev-parse", "HEAD")
    real = _git(top, "rev-parse", "HEAD^{tree}")
    (top / "a.txt").write_bytes(b"a replacement commit's content\n")
    _git(top, "commit", "-qam", "other")
    _git(top, "replace", head, _git(top, "rev-parse", "HEAD"))
    repo = gitrepo.find(top)
    assert repo is not None
    assert gitrepo.tree_of(repo, head) == real


def test_a_trailer_joins_an_existing_trailer_block_or_starts_one() -> None:
    line = "Ketch-Receipt: sha256:00"
    assert gitrepo.add_trailer("subject\n", line) == f"subject\n\n{line}\n"
    assert (
        gitrepo.add_trailer("subject\n\nbody text\n", line) == f"subject\n\nbody text\n\n{line}\n"
    )
    signed = "subject\n\nbody\n\nSigned-off-by: A <a@x>\n"
    assert (
        gitrepo.add_trailer(signed, line) == f"subject\n\nbody\n\nSigned-off-by: A <a@x>\n{line}\n"
    )
