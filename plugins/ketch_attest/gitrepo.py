"""The git that receipts need: tree ids, a commit's trailer, ``user.signingkey``.

Every git run here is plumbing that runs no program a repository can name (no index
refresh, no filters, no diff), with hooks and fsmonitor switched off anyway, replace
objects ignored (a ``refs/replace`` ref must not change what a tree id means), no pager,
no prompts, and none of the caller's ``GIT_*`` variables. Tree ids are computed here,
per git's object format (SHA-1 or SHA-256), from ``git ls-tree`` of a commit plus the
files as they are now: nothing is written into the repository to compute them.
(When ``ketch_git_kit`` lands on main, :func:`run` is the one seam to move onto it.)
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ketch.api import KetchError

SAFE = (
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "gc.auto=0",
    "-c",
    "maintenance.auto=false",
)
TRAILER = "Ketch-Receipt"


@dataclass(frozen=True)
class Done:
    code: int
    out: bytes
    err: str


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(
        GIT_NO_REPLACE_OBJECTS="1", GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", GIT_PAGER="cat"
    )
    return env


def run(cwd: Path, *args: str, stdin: bytes | None = None) -> Done:
    git = shutil.which("git")
    if git is None:
        return Done(127, b"", "git is not installed")
    try:
        done = subprocess.run(
            [git, *SAFE, *args],
            cwd=cwd,
            input=stdin,
            capture_output=True,
            env=_env(),
            timeout=60,
            stdin=None if stdin is not None else subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Done(127, b"", str(exc))
    return Done(done.returncode, done.stdout, done.stderr.decode("utf-8", "replace").strip())


def config_value(cwd: Path, key: str) -> str | None:
    done = run(cwd, "config", "--get", key)
    return done.out.decode("utf-8", "replace").strip() if done.code == 0 else None


@dataclass(frozen=True)
class Repo:
    top: Path
    prefix: str  # the workspace's path inside the repository ("" at its top), posix
    algorithm: str  # sha1 | sha256

    def new(self) -> hashlib._Hash:
        return hashlib.new(self.algorithm)

    def object_id(self, kind: bytes, body: bytes) -> bytes:
        h = self.new()
        h.update(b"%s %d\0" % (kind, len(body)))
        h.update(body)
        return h.digest()


def find(workspace: Path) -> Repo | None:
    """The repository ``workspace`` is in (None: not in one, or git cannot say)."""
    done = run(workspace, "rev-parse", "--show-toplevel")
    if done.code != 0:
        return None
    top = Path(os.fsdecode(done.out.rstrip(b"\n")))
    fmt = run(workspace, "rev-parse", "--show-object-format")
    algorithm = fmt.out.decode().strip() if fmt.code == 0 else "sha1"
    if algorithm not in ("sha1", "sha256"):
        return None
    try:
        prefix = Path(os.path.realpath(workspace)).relative_to(os.path.realpath(top)).as_posix()
    except ValueError:
        return None
    return Repo(top, "" if prefix == "." else prefix, algorithm)


def resolve(repo: Repo, rev: str) -> str | None:
    done = run(repo.top, "rev-parse", "--verify", "--quiet", "--end-of-options", rev)
    return done.out.decode().strip() if done.code == 0 and done.out.strip() else None


def tree_of(repo: Repo, rev: str) -> str | None:
    return resolve(repo, f"{rev}^{{tree}}")


def entries_of(repo: Repo, commit: str | None) -> dict[bytes, tuple[bytes, bytes]]:
    """path -> (mode, raw id) of every blob and submodule in ``commit`` (empty: none)."""
    if commit is None:
        return {}
    done = run(repo.top, "ls-tree", "-r", "-z", "--full-tree", commit)
    if done.code != 0:
        raise KetchError(f"git ls-tree {commit[:12]} failed: {done.err or done.code}")
    found: dict[bytes, tuple[bytes, bytes]] = {}
    for record in done.out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _kind, oid = meta.split(b" ")
        found[path] = (mode, bytes.fromhex(oid.decode()))
    return found


def file_entry(repo: Repo, path: Path) -> tuple[bytes, bytes] | None:
    """(mode, blob id) git would record for ``path`` as it is now (None: gone, or not a
    file or link). Raw content: a clean filter or eol conversion is not applied."""
    try:
        st = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return b"120000", repo.object_id(b"blob", os.fsencode(os.readlink(path)))
    if not stat.S_ISREG(st.st_mode):
        return None
    mode = b"100755" if st.st_mode & 0o100 else b"100644"
    return mode, repo.object_id(b"blob", path.read_bytes())


def blob_id(repo: Repo, data: bytes) -> str:
    return repo.object_id(b"blob", data).hex()


def overlay_tree(repo: Repo, base: str | None, workspace: Path, changed: list[str]) -> str:
    """The tree id of ``base`` with ``changed`` (workspace-relative) as they are now: the
    tree a commit of exactly those changes on ``base`` would have."""
    entries = entries_of(repo, base)
    for rel in changed:
        key = os.fsencode(f"{repo.prefix}/{rel}" if repo.prefix else rel)
        entry = file_entry(repo, workspace / rel)
        if entry is None:
            entries.pop(key, None)
        else:
            entries[key] = entry
    return tree_id(repo, entries).hex()


def tree_id(repo: Repo, entries: dict[bytes, tuple[bytes, bytes]]) -> bytes:
    root: dict[bytes, object] = {}
    for path, entry in entries.items():
        node = root
        *dirs, name = path.split(b"/")
        for part in dirs:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):  # a file where a directory now is: it is replaced
                child = node[part] = {}
            node = child
        node[name] = entry
    return _write(repo, root)


def _write(repo: Repo, node: dict[bytes, object]) -> bytes:
    items: list[tuple[bytes, bytes, bytes]] = []
    for name, value in node.items():
        if isinstance(value, dict):
            if not value:
                continue
            items.append((name + b"/", b"40000", _write(repo, value)))
        else:
            entry: tuple[bytes, bytes] = value  # type: ignore[assignment]
            items.append((name, entry[0], entry[1]))
    items.sort(key=lambda item: item[0])  # git orders a directory as its name plus "/"
    body = b"".join(mode + b" " + name.rstrip(b"/") + b"\0" + oid for name, mode, oid in items)
    return repo.object_id(b"tree", body)


# --- the trailer ------------------------------------------------------------------------------


def trailers(repo: Repo, rev: str) -> list[str]:
    """The values of ``Ketch-Receipt`` trailers in ``rev``'s message."""
    done = run(repo.top, "cat-file", "commit", rev)
    if done.code != 0:
        return []
    _, _, message = done.out.partition(b"\n\n")
    prefix = f"{TRAILER.lower()}:"
    return [
        line.split(":", 1)[1].strip()
        for line in message.decode("utf-8", "replace").splitlines()
        if line.lower().startswith(prefix)
    ]


def add_trailer(message: str, line: str) -> str:
    """``message`` with ``line`` in its trailer block (a new block when it has none)."""
    body = message.rstrip("\n")
    last = body.rsplit("\n\n", 1)[-1].splitlines() if "\n\n" in body else []
    in_block = bool(last) and all(_is_trailer(x) for x in last)
    return body + ("\n" if in_block else "\n\n") + line + "\n"


def _is_trailer(line: str) -> bool:
    token, sep, _ = line.partition(": ")
    return bool(sep) and token.replace("-", "").isalnum()


def amend_with_trailer(repo: Repo, value: str) -> str:
    """Make HEAD's commit again with a ``Ketch-Receipt: VALUE`` trailer (same tree,
    parents, author; committer time now), by plumbing: no hook, no signing program, no
    editor runs. Returns the new commit id. Refuses a signed commit (its signature
    would be lost)."""
    head = resolve(repo, "HEAD")
    if head is None:
        raise KetchError("there is no commit to amend (HEAD has none)")
    done = run(repo.top, "cat-file", "commit", head)
    if done.code != 0:
        raise KetchError(f"cannot read HEAD's commit: {done.err}")
    header, _, message = done.out.partition(b"\n\n")
    lines = header.split(b"\n")
    if any(line.startswith((b"gpgsig", b"gpgsig-sha256")) for line in lines):
        raise KetchError(
            "HEAD is a signed commit: amending it would drop its signature; add the trailer yourself with "
            f'`git commit --amend --trailer "{TRAILER}: {value}"` (which signs it again)'
        )
    if value in trailers(repo, head):
        return head
    now = int(time.time())
    rebuilt = []
    for line in lines:
        if line.startswith(b"committer "):
            who, _, rest = line.rpartition(b"> ")
            tz = rest.split(b" ")[-1] if b" " in rest else b"+0000"
            line = who + b"> " + str(now).encode() + b" " + tz
        rebuilt.append(line)
    text = add_trailer(message.decode("utf-8", "surrogateescape"), f"{TRAILER}: {value}")
    body = b"\n".join(rebuilt) + b"\n\n" + text.encode("utf-8", "surrogateescape")
    made = run(repo.top, "hash-object", "-t", "commit", "-w", "--stdin", stdin=body)
    if made.code != 0:
        raise KetchError(f"git could not write the amended commit: {made.err}")
    new = made.out.decode().strip()
    moved = run(
        repo.top,
        "update-ref",
        "-m",
        f"ketch attest: {TRAILER} trailer",
        "HEAD",
        new,
        head,
    )
    if moved.code != 0:
        raise KetchError(f"git could not move HEAD to the amended commit: {moved.err}")
    return new
