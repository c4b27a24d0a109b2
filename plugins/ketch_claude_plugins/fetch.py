"""Getting a marketplace's or a plugin's files, running nothing they hold.

git runs through ``ketch_git_kit`` (no hooks, filters, fsmonitor, includes' programs,
credential helpers, pagers...), with only the transport of the URL the person gave
opened, into a fresh folder: a clone never reuses a folder a repository could have
configured. Its ``.git`` is removed afterwards: nobody runs git there later.

A plugin's files are copied, never used in place: regular files and executable bits
only; a link that stays inside the plugin stays a link, one to elsewhere in the
marketplace is copied as what it points to, one leading outside is left out (said);
``.git`` folders, devices and pipes are left out. A plugin cannot be larger than
:data:`MAX_FILES` files or :data:`MAX_BYTES` bytes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from ketch.api import KetchError
from ketch_claude_plugins.catalog import inside, transport

MAX_FILES = 20_000
MAX_BYTES = 512 * 1024 * 1024
CLONE_TIMEOUT = 600.0


def clone(url: str, dest: Path, environ: Mapping[str, str], *, ref: str = "", sha: str = "") -> str:
    """Clone ``url`` (at ``ref``, or the commit ``sha``) into ``dest`` (must not exist)
    and return the commit checked out; ``dest`` keeps no ``.git``."""
    from ketch_git_kit import run_git

    dest.parent.mkdir(parents=True, exist_ok=True)
    args = ["clone", "-q", "--no-tags", "--template=", "--no-recurse-submodules"]
    if not sha:
        args += ["--depth", "1"]
    if ref:
        args += ["--branch", ref]
    args += ["--", url, str(dest)]
    run = run_git(
        args, dest.parent, environ=environ, timeout=CLONE_TIMEOUT, transports={transport(url)}
    )
    if not run.ok:
        _discard(dest)
        raise KetchError(f"git clone {url} failed: {run.reason()}")
    if sha:
        run = run_git(["checkout", "-q", "--detach", sha], dest, environ=environ, avoid=dest)
        if not run.ok:
            _discard(dest)
            raise KetchError(f"{url}: commit {sha} cannot be checked out: {run.reason()}")
    head = run_git(["rev-parse", "HEAD"], dest, environ=environ, avoid=dest)
    commit = head.stdout.decode("ascii", "replace").strip() if head.ok else ""
    _discard(dest / ".git")
    return commit


def _discard(path: Path) -> None:
    from ketch_claude_plugins.registry import remove_tree

    remove_tree(path)


class _Copy:
    """One copy: the plugin's own folder (links inside it stay links), where it goes,
    the marketplace around it, what was left out, and the size so far."""

    def __init__(self, source: Path, dest: Path, boundary: Path) -> None:
        self.source = source
        self.dest = dest
        self.boundary = boundary
        self.notes: list[str] = []
        self.files = 0
        self.bytes = 0

    def take(self, size: int, what: Path) -> None:
        self.files += 1
        self.bytes += size
        if self.files > MAX_FILES or self.bytes > MAX_BYTES:
            raise KetchError(
                f"{what}: the plugin is larger than ketch installs ({MAX_FILES:,} files, "
                f"{MAX_BYTES // (1024 * 1024)} MiB)"
            )

    def directory(self, src: Path, dest: Path, seen: frozenset[str]) -> None:
        if str(src) in seen:
            self.notes.append(f"{src}: a link loop; left out")
            return
        seen = seen | {str(src)}
        dest.mkdir(parents=True, exist_ok=True)
        try:
            names = sorted(os.listdir(src))
        except OSError as exc:
            raise KetchError(f"{src}: cannot be read ({exc.strerror or exc})") from None
        for name in names:
            path = src / name
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(info.st_mode):
                self.link(path, dest / name, seen)
            elif stat.S_ISDIR(info.st_mode):
                if name != ".git":
                    self.directory(path, dest / name, seen)
            elif stat.S_ISREG(info.st_mode):
                self.file(path, dest / name, info)
            else:
                self.notes.append(f"{path}: not a file or folder; left out")

    def file(self, path: Path, target: Path, info: os.stat_result) -> None:
        self.take(info.st_size, path)
        shutil.copyfile(path, target, follow_symlinks=False)
        os.chmod(target, 0o755 if info.st_mode & 0o111 else 0o644)

    def link(self, link: Path, target: Path, seen: frozenset[str]) -> None:
        real = Path(os.path.realpath(link))
        if not real.exists():
            self.notes.append(f"{link}: a link to nothing; left out")
        elif inside(real, self.source):
            self.take(0, link)
            copied = self.dest / real.relative_to(self.source)
            os.symlink(os.path.relpath(copied, target.parent), target)
        elif inside(real, self.boundary):
            if real.is_dir():
                self.directory(real, target, seen)
            else:
                self.file(real, target, os.stat(real))
        else:
            self.notes.append(f"{link}: a link to {real}, outside the marketplace; left out")


def copy_plugin(source: Path, dest: Path, boundary: Path) -> list[str]:
    """Copy the plugin at ``source`` into ``dest`` (created), following the link rules
    above; ``boundary`` is the marketplace (or repository) it came from. Returns one
    line per thing left out."""
    if not source.is_dir():
        raise KetchError(f"{source}: no such plugin folder")
    real = Path(os.path.realpath(source))
    copy = _Copy(real, dest, Path(os.path.realpath(boundary)))
    copy.directory(real, dest, frozenset())
    return copy.notes


def tree_digest(root: Path) -> str:
    """One digest of a copied plugin: every file's path and content, every link's
    target (an update that changes nothing is told from one that does)."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]):
            path = Path(folder) / name
            relative = path.relative_to(root).as_posix()
            if path.is_symlink():
                digest.update(f"L {relative} {os.readlink(path)}\n".encode())
                continue
            mode = "x" if os.access(path, os.X_OK) else "f"
            digest.update(f"{mode} {relative} ".encode())
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            digest.update(b"\n")
    return digest.hexdigest()
