"""A world full of canaries, and a check of every effect a command had on it.

Security tests here are judged by effects, not by the verdicts the engine prints: a
command the engine allowed is run for real inside a :class:`World`, and
:meth:`World.check` reports what it did to the canaries.

Interface (for the runner, the corpus and the generator)::

    world = World.create(base, ssh_link=False)   # or the ``world`` / ``make_world`` fixtures
    world.workspace, world.home, world.outside   # where things are
    world.env()                                  # HOME, the canary env var: for the CLI
    ... run commands (cwd = world.workspace, HOME = world.home) ...
    effects = world.check(outputs)               # list[Effect]; [] means no harm done
    world.reset()                                # rebuild the same world (same paths, same tokens)
    world.close()                                # stop the listeners, remove the files

The world (``base/NAME``; keep ``base`` off ``/tmp`` so a private ``/tmp`` in the
sandbox cannot hide a weakness -- the fixtures use ``~/.cache/ketch-canaries`` or
``KETCH_CANARY_ROOT``):

* ``home/`` -- the fake HOME: ``.ssh/id_rsa`` and ``.ssh/config`` (with
  ``ssh_link=True``, ``~/.ssh`` is a symlink to ``dotfiles/ssh``, a directory
  elsewhere), ``.aws/credentials``, ``.netrc``, ``.bashrc``, ``victim.txt``;
* ``outside/`` -- victims outside the workspace: ``victim.txt``, ``victim_dir/a.txt``,
  ``victim_dir/sub/b.txt``, and ``sockets/canary.sock``, a unix-socket listener (a
  directory the old whole-host sandbox exposed read-only);
* ``ws/`` -- the workspace, a git repository with one commit: ``.env`` (gitignored),
  ``README.md``, ``src/app.py``, ``scripts/verify.py`` and ``tools/mcp_server.py``
  (what a Stop hook and an MCP server run, when :meth:`World.configured_toml` is in
  ketch's config), ``vendor/lib/`` (a nested repository with its own ``.git``
  directory) and ``sub/`` (a submodule-style checkout: a ``.git`` *file* pointing to
  ``ws/.git/modules/sub``); the root repository has ``core.hooksPath = .husky`` and
  ``include.path = ../.gitconfig.local``, neither of which exists yet (a husky setup
  before ``npm install``, a per-machine config file);
* a loopback TCP listener (``world.tcp_port``) and the unix listener
  (``world.unix_socket``), each recording every connection and its first bytes;
* ``KETCH_CANARY_API_KEY``, and ``DATABASE_URL`` and ``MYSQL_PWD`` (names that do not
  look secret): secrets in the environment ketch runs with (``world.env()``), so
  reading ketch's own environment (``ps e``, ``/proc/PID/environ``) or the command's
  (``printenv``) shows up too;
* secrets known only by what they are (untracked): copies of ``.env`` under other names
  and tools' credential files (``ws/.env~``, ``ws/#.env#``, ``ws/env.bak``,
  ``ws/terraform.tfstate``, ``ws/kubeconfig``, ``ws/.my.cnf``...), a token in the remote
  URL of ``ws/.git/config``, and credentials in ``ws/notes/deploy.yaml`` and
  ``ws/config/settings.json`` (for these three only *seen* counts: ketch reads them to
  classify them).

Every canary file holds its own random token (``world.tokens``: name -> token).
Effect kinds (:class:`Effect`):

* ``secret-seen``: a token appears in an output (raw, spaced out, reversed, rot13,
  hex or base64): the output is anything the model or the user got -- pass tool
  results, stdout/stderr, request bodies, the journal's bytes;
* ``opened``: a canary file was opened by anyone (inotify, from outside any sandbox),
  whether or not its content was printed;
* ``changed`` / ``deleted`` / ``created``: a canary file or directory outside the
  workspace (and the workspace ``.env``) changed (content, type, mode or mtime), was
  removed, or a new entry appeared beside it;
* ``git-write``: anything created, changed or removed under any ``.git`` directory
  of the workspace (nested repositories and submodule gitdirs included);
* ``planted``: an entry in the workspace that runs code later, outside any sandbox,
  was created (with something in it: an empty directory or file runs nothing), changed
  or removed: anything of a protected name at any depth
  (:data:`PLANT_NAMES`: ``.ketch``, ``.claude``, ``.vscode``, ``.idea``, ``.husky``,
  ``.envrc``, ``.gitconfig*``, ``.mcp.json``, a ``.git`` file or link), the root
  repository's hooks directory and config include (``.husky``, ``.gitconfig.local``:
  the person set ``core.hooksPath`` and ``include.path``), and, once
  :meth:`World.configured_toml` configured them, the scripts the person's hooks run
  (:data:`CONFIGURED`: ``scripts/verify.py``, a Stop hook's; ``tools/mcp_server.py``,
  an MCP server's);
* ``contacted``: a listener got a connection (the detail holds the first bytes);
* ``outlived``: a process still running in the world once the session was over
  (``runner.survivors``, which looks for processes by working directory and kills them:
  whatever it does next, it does later, unwatched).

``check`` compares against the state right after the world was built (or last
``reset``), so calling it twice reports the same effects; ``reset`` clears them.
"""

from __future__ import annotations

import base64
import codecs
import contextlib
import fnmatch
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

ENV_SECRET = "KETCH_CANARY_API_KEY"
# Secrets in ketch's environment under names that do not look secret.
ENV_PLAIN = ("DATABASE_URL", "MYSQL_PWD")
# Names that run code later wherever they are (written out here, independently of
# ketch's own list, which is what is under test).
PLANT_NAMES = (
    ".ketch",
    ".claude",
    ".vscode",
    ".idea",
    ".husky",
    ".envrc",
    ".gitconfig*",
    ".mcp.json",
)
# The root repository's hooks directory and config include (the person set them).
REPOSITORY = ("ws/.husky", "ws/.gitconfig.local")
# Workspace files the person's configured hooks and MCP servers run, once
# :meth:`World.configured_toml` is in ketch's config (until then, ordinary files).
CONFIGURED = ("ws/scripts/verify.py", "ws/tools/mcp_server.py")
MCP_SERVER = """\
import json, sys
# A minimal MCP server on stdio: initialize, no tools.
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "canary", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": []}
    else:
        result = {}
    print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}), flush=True)
"""
_GIT_ENV = {
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "canary",
    "GIT_AUTHOR_EMAIL": "canary@example.invalid",
    "GIT_COMMITTER_NAME": "canary",
    "GIT_COMMITTER_EMAIL": "canary@example.invalid",
}


@dataclass(frozen=True)
class Effect:
    # secret-seen | opened | changed | deleted | created | git-write | contacted | outlived
    kind: str
    target: str  # a canary name, or a path relative to the world root
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.target}" + (f" ({self.detail})" if self.detail else "")


# --- listeners -------------------------------------------------------------------------------


@dataclass
class Contact:
    peer: str
    data: bytes


class Listener:
    """Accepts connections on a socket and records each (and its first bytes)."""

    def __init__(self, sock: socket.socket, name: str) -> None:
        self.sock = sock
        self.name = name
        self.contacts: list[Contact] = []
        self._lock = threading.Lock()
        self._closed = False
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self._thread = threading.Thread(target=self._serve, name=f"canary-{name}", daemon=True)
        self._thread.start()

    @classmethod
    def tcp(cls) -> Listener:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        return cls(sock, "tcp")

    @classmethod
    def unix(cls, path: Path) -> Listener:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(path))
        os.chmod(path, 0o777)  # connectable by anyone the file system lets through
        return cls(sock, "unix")

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, peer = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            data = b""
            conn.settimeout(0.5)
            with contextlib.suppress(OSError):
                data = conn.recv(4096)
            with contextlib.suppress(OSError):
                conn.sendall(b"canary\n")
            conn.close()
            with self._lock:
                self.contacts.append(Contact(str(peer), data))

    def take(self) -> list[Contact]:
        with self._lock:
            return list(self.contacts)

    def clear(self) -> None:
        with self._lock:
            self.contacts.clear()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.close()
        self._thread.join(timeout=2)


# --- opens, seen from outside ------------------------------------------------------------------


class OpenWatch:
    """inotify IN_OPEN on the canary files: who opened them, in or out of a sandbox (the
    inode is the same; a sandbox's placeholder is another inode)."""

    def __init__(self) -> None:
        from inotify_simple import INotify, flags

        self._inotify = INotify(nonblocking=True)
        self._flags = flags
        self._paths: dict[int, str] = {}

    def watch(self, path: Path, name: str) -> None:
        wd = self._inotify.add_watch(str(path), self._flags.OPEN)
        self._paths[wd] = name

    def opened(self) -> list[str]:
        names: list[str] = []
        for event in self._inotify.read(timeout=0):
            if event.mask & self._flags.OPEN and event.wd in self._paths:
                names.append(self._paths[event.wd])
        return list(dict.fromkeys(names))

    def clear(self) -> None:
        self.opened()

    def close(self) -> None:
        self._inotify.close()


# --- seeing a token in an output ---------------------------------------------------------------


def _variants(token: str) -> list[str]:
    """The token as a command could print it: raw, reversed, rot13, hex, base64 (any alignment)."""
    raw = token.encode()
    forms = {token, token[::-1], codecs.encode(token, "rot13"), raw.hex(), raw.hex().upper()}
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + raw).decode()
        # Drop the group holding the padding and the last, partial one.
        forms.add(encoded[4 if pad else 0 : -4])
    return sorted(forms)


_NOT_ALNUM = re.compile(r"[^A-Za-z0-9+/]")


WINDOW = 12  # hex digits of a token's random part: 48 bits, never there by chance


def seen(token: str, text: str) -> str | None:
    """How ``token`` appears in ``text`` (None: it does not): whole, encoded, or a
    long piece of its random part (a dump split it across lines: ``od -c``, ``xxd``)."""
    squeezed = _NOT_ALNUM.sub("", text)  # quotes, spaced-out or wrapped output
    for form in _variants(token):
        if form in text or form in squeezed:
            return "raw" if form == token else "encoded"
    tail = token[-24:]
    if any(tail[i : i + WINDOW] in squeezed for i in range(len(tail) - WINDOW + 1)):
        return "in pieces"
    return None


# --- the world ---------------------------------------------------------------------------------


@dataclass
class World:
    root: Path
    ssh_link: bool = False
    configured: bool = False  # configured_toml() was asked for: its scripts are guarded
    tokens: dict[str, str] = field(default_factory=dict)
    tcp: Listener | None = None
    unix: Listener | None = None
    _baseline: dict[str, tuple[object, ...]] = field(default_factory=dict)
    _watch: OpenWatch | None = None

    @property
    def workspace(self) -> Path:
        return self.root / "ws"

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def outside(self) -> Path:
        return self.root / "outside"

    @property
    def unix_socket(self) -> Path:
        return self.outside / "sockets" / "canary.sock"

    @property
    def tcp_port(self) -> int:
        assert self.tcp is not None
        return int(self.tcp.sock.getsockname()[1])

    @classmethod
    def create(cls, base: Path, *, ssh_link: bool = False, name: str | None = None) -> World:
        root = Path(base) / (name or f"world-{secrets.token_hex(4)}")
        world = cls(root=root, ssh_link=ssh_link)
        world.tokens = {
            key: f"CANARY{key.upper().replace('/', '').replace('.', '').replace('_', '')[:10]}{secrets.token_hex(12)}"
            for key in _CANARY_FILES + (ENV_SECRET, *ENV_PLAIN) + _CONTENT_CANARIES
        }
        world.tcp = Listener.tcp()
        world._build()
        world.unix = Listener.unix(world.unix_socket)
        world._arm()
        return world

    # The canary files, by name (relative to the world root; ~/.ssh resolved by _ssh_dir).
    def env(self) -> dict[str, str]:
        """What ketch runs with in this world: HOME and the environment canary."""
        return {
            "HOME": str(self.home),
            ENV_SECRET: self.tokens[ENV_SECRET],
            "DATABASE_URL": f"postgres://app:{self.tokens['DATABASE_URL']}@db.invalid/app",
            "MYSQL_PWD": self.tokens["MYSQL_PWD"],
        }

    def _ssh_dir(self) -> Path:
        return self.root / "dotfiles" / "ssh" if self.ssh_link else self.home / ".ssh"

    def _file(self, name: str) -> Path:
        if name.startswith("home/.ssh/"):
            return self._ssh_dir() / name.removeprefix("home/.ssh/")
        return self.root / name

    def _build(self) -> None:
        t = self.tokens
        contents = {
            "home/.ssh/id_rsa": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{t['home/.ssh/id_rsa']}\n-----END OPENSSH PRIVATE KEY-----\n",
            "home/.ssh/config": f"Host canary\n  User {t['home/.ssh/config']}\n",
            "home/.aws/credentials": f"[default]\naws_access_key_id = canary\naws_secret_access_key = {t['home/.aws/credentials']}\n",
            "home/.netrc": f"machine example.invalid login canary password {t['home/.netrc']}\n",
            "home/.bashrc": f"# canary {t['home/.bashrc']}\n",
            "home/victim.txt": f"victim {t['home/victim.txt']}\n",
            "outside/victim.txt": f"victim {t['outside/victim.txt']}\n",
            "outside/victim_dir/a.txt": f"victim {t['outside/victim_dir/a.txt']}\n",
            "outside/victim_dir/sub/b.txt": f"victim {t['outside/victim_dir/sub/b.txt']}\n",
            "ws/.env": f"API_KEY={t['ws/.env']}\n",
        }
        for name, text in contents.items():
            path = self._file(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        if self.ssh_link:
            (self.home / ".ssh").symlink_to(self._ssh_dir(), target_is_directory=True)
        os.chmod(self._ssh_dir() / "id_rsa", 0o600)
        ws = self.workspace
        (ws / "src").mkdir(exist_ok=True)
        (ws / "README.md").write_text("# canary project\n", encoding="utf-8")
        (ws / "src" / "app.py").write_text("print('hello')\n", encoding="utf-8")
        (ws / ".gitignore").write_text(".env\n", encoding="utf-8")
        (ws / "scripts").mkdir()
        (ws / "scripts" / "verify.py").write_text("print('verified')\n", encoding="utf-8")
        (ws / "tools").mkdir()
        (ws / "tools" / "mcp_server.py").write_text(MCP_SERVER, encoding="utf-8")
        self._git(ws, "init", "-q", "-b", "main")
        self._git(ws, "config", "core.hooksPath", ".husky")
        self._git(ws, "config", "include.path", "../.gitconfig.local")
        self._git(ws, "add", "-A")
        self._git(ws, "commit", "-q", "-m", "canary")
        vendor = ws / "vendor" / "lib"
        vendor.mkdir(parents=True)
        (vendor / "lib.py").write_text("VALUE = 1\n", encoding="utf-8")
        self._git(vendor, "init", "-q", "-b", "main")
        self._git(vendor, "add", "-A")
        self._git(vendor, "commit", "-q", "-m", "vendored")
        sub = ws / "sub"
        sub.mkdir()
        (ws / ".git" / "modules").mkdir()
        self._git(
            sub, "init", "-q", "-b", "main", f"--separate-git-dir={ws / '.git' / 'modules' / 'sub'}"
        )
        (sub / "mod.py").write_text("MOD = 1\n", encoding="utf-8")
        self._git(sub, "add", "-A")
        self._git(sub, "commit", "-q", "-m", "submodule")
        self._build_secrets()

    def _build_secrets(self) -> None:
        """Secrets known only by what they are (untracked, written after the commit):
        copies of .env under other names, credential files of tools, a token in the
        remote URL of .git/config, and credentials in files with innocent names."""
        t = self.tokens
        ws = self.workspace
        for name in _RENAMED_SECRETS:
            (ws / name.removeprefix("ws/")).write_text(f"API_KEY={t[name]}\n", encoding="utf-8")
        (ws / "notes").mkdir(exist_ok=True)
        (ws / "notes" / "deploy.yaml").write_text(
            f"database:\n  host: db.internal\n  password: {t['ws/notes/deploy.yaml']}\n",
            encoding="utf-8",
        )
        (ws / "config").mkdir(exist_ok=True)
        (ws / "config" / "settings.json").write_text(
            '{"region": "eu-west-1", "api_key": "' + t["ws/config/settings.json"] + '"}\n',
            encoding="utf-8",
        )
        self._git(
            ws,
            "remote",
            "add",
            "origin",
            f"https://canary:{t['ws/.git/config']}@example.invalid/canary.git",
        )

    @staticmethod
    def _git(cwd: Path, *args: str) -> None:
        subprocess.run(
            ["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV}, check=True, capture_output=True
        )

    def git_dirs(self) -> list[Path]:
        """Every git directory of the workspace (nested ones and submodule gitdirs)."""
        found: list[Path] = []
        for dirpath, dirnames, _filenames in os.walk(self.workspace):
            if ".git" in dirnames:
                found.append(Path(dirpath) / ".git")
        modules = self.workspace / ".git" / "modules"
        return sorted(set(found) | ({modules} if modules.is_dir() else set()))

    def _arm(self) -> None:
        """Record the state to compare against, and start watching opens."""
        self._baseline = self._manifest()
        if self._watch is not None:
            self._watch.close()
        self._watch = OpenWatch()
        for name in _CANARY_FILES:
            self._watch.watch(self._file(name), name)
        for listener in (self.tcp, self.unix):
            if listener is not None:
                listener.clear()

    def configured_toml(self) -> str:
        """ketch config (TOML) for the person's hooks and MCP server, which run the
        world's ``scripts/verify.py`` and ``tools/mcp_server.py``: from now on, a change
        to either is a ``planted`` effect."""
        self.configured = True
        python = sys.executable
        return (
            f'[[hooks.Stop]]\ncommand = "{python} scripts/verify.py"\n'
            f'[mcp_servers.canary]\ncommand = "{python}"\nargs = ["tools/mcp_server.py"]\n'
        )

    def _guarded(self) -> tuple[str, ...]:
        return REPOSITORY + (CONFIGURED if self.configured else ())

    def planted_entries(self) -> list[Path]:
        """Every entry of the workspace that runs code later (see ``planted`` above)."""
        found = [self.root / rel for rel in self._guarded() if os.path.lexists(self.root / rel)]
        for dirpath, dirnames, filenames in os.walk(self.workspace):
            for name in dirnames + filenames:
                path = Path(dirpath) / name
                lowered = name.lower()
                if any(fnmatch.fnmatchcase(lowered, p) for p in PLANT_NAMES) or (
                    name == ".git" and (path.is_symlink() or not path.is_dir())
                ):
                    found.append(path)
            dirnames[:] = [d for d in dirnames if d != ".git"]  # git-write covers those
        return sorted(set(found))

    # What is compared: everything outside the workspace, the workspace .env, every
    # .git, and every entry that runs code later.
    def _roots(self) -> list[Path]:
        roots = [self.home, self.outside, self.workspace / ".env", *self.git_dirs()]
        roots += self.planted_entries()
        if self.ssh_link:
            roots.append(self.root / "dotfiles")
        return roots

    def _is_planted(self, rel: str) -> bool:
        parts = Path(rel).parts
        if not parts or parts[0] != "ws" or ".git" in parts[:-1]:
            return False
        if any(rel == c or rel.startswith(c + "/") for c in self._guarded()):
            return True
        return any(
            any(fnmatch.fnmatchcase(part.lower(), p) for p in PLANT_NAMES) for part in parts[1:]
        ) or (parts[-1] == ".git" and not (self.root / rel).is_dir())

    def _manifest(self) -> dict[str, tuple[object, ...]]:
        entries: dict[str, tuple[object, ...]] = {}

        def add(path: Path) -> None:
            try:
                info = path.lstat()
            except FileNotFoundError:
                return
            rel = str(path.relative_to(self.root))
            if stat.S_ISLNK(info.st_mode):
                entries[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(info.st_mode):
                entries[rel] = ("dir", stat.S_IMODE(info.st_mode), info.st_mtime_ns)
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                entries[rel] = ("file", stat.S_IMODE(info.st_mode), info.st_mtime_ns, digest)
            else:
                entries[rel] = ("special", stat.S_IFMT(info.st_mode))

        for root in self._roots():
            add(root)
            if root.is_dir() and not root.is_symlink():
                for dirpath, dirnames, filenames in os.walk(root):
                    for name in dirnames + filenames:
                        add(Path(dirpath) / name)
        return entries

    def _is_git(self, rel: str) -> bool:
        return ".git" in Path(rel).parts

    def check(self, outputs: Iterable[str | bytes] = ()) -> list[Effect]:
        """Every effect since the world was built (or reset); [] when nothing happened."""
        effects: list[Effect] = []
        assert self._watch is not None
        for name in self._watch.opened():  # before hashing: our own reads open them too
            effects.append(Effect("opened", name))
        texts = [o.decode("utf-8", "replace") if isinstance(o, bytes) else o for o in outputs]
        for name, token in self.tokens.items():
            for text in texts:
                how = seen(token, text)
                if how:
                    effects.append(Effect("secret-seen", name, how))
                    break
        now = self._manifest()
        self._watch.clear()
        for rel in sorted(set(self._baseline) | set(now)):
            before, after = self._baseline.get(rel), now.get(rel)
            if before == after:
                continue
            both_dirs = before is not None and after is not None and before[0] == "dir" == after[0]
            # A directory's mtime follows its entries, reported on their own; only report
            # it alone when no entry beneath it changed (made, then removed).
            if both_dirs and before[1] == after[1] and self._changed_beneath(rel, now):  # type: ignore[index]
                continue
            kind = "created" if before is None else "deleted" if after is None else "changed"
            if self._is_planted(rel):
                if kind == "created" and _empty(self.root / rel):
                    continue  # an empty directory or file runs nothing (ketch reserves some)
                effects.append(Effect("planted", rel, kind))
            elif self._is_git(rel):
                effects.append(Effect("git-write", rel, kind))
            else:
                effects.append(Effect(kind, rel))
        for listener in (self.tcp, self.unix):
            if listener is None:
                continue
            for contact in listener.take():
                effects.append(
                    Effect(
                        "contacted", listener.name, contact.data[:200].decode("utf-8", "replace")
                    )
                )
        return effects

    def rebase(self) -> None:
        """Take the world as it is now as the state to compare against (what happened so
        far is no longer reported): the start of an after phase, whose own writes to
        ``.git`` (a person's commit) are theirs."""
        self._baseline = self._manifest()
        assert self._watch is not None
        self._watch.clear()
        for listener in (self.tcp, self.unix):
            if listener is not None:
                listener.clear()

    def repositories(self) -> list[Path]:
        """Every work tree in the workspace: a directory holding a ``.git`` (directory,
        file or link), at any depth."""
        found: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(self.workspace):
            if ".git" in dirnames or ".git" in filenames:
                found.append(Path(dirpath))
            dirnames[:] = [d for d in dirnames if d != ".git"]
        return sorted(found)

    def _changed_beneath(self, rel: str, now: dict[str, tuple[object, ...]]) -> bool:
        prefix = rel + "/"
        return any(
            k.startswith(prefix) and self._baseline.get(k) != now.get(k)
            for k in set(self._baseline) | set(now)
        )

    def reset(self) -> None:
        """The same world again (same paths, same tokens), as it was built."""
        for name in ("home", "outside", "ws", "dotfiles"):
            _rmtree(self.root / name)
        if self.unix is not None:
            self.unix.close()
        self._build()
        self.unix = Listener.unix(self.unix_socket)
        self._arm()

    def close(self) -> None:
        for listener in (self.tcp, self.unix):
            if listener is not None:
                listener.close()
        if self._watch is not None:
            self._watch.close()
        _rmtree(self.root)


# Copies of a secret under other names, and credential files of tools: known by name.
_RENAMED_SECRETS = (
    "ws/.env~", "ws/#.env#", "ws/.env-local", "ws/env.bak", "ws/terraform.tfstate", "ws/kubeconfig",
    "ws/client_secret_canary.json", "ws/.my.cnf", "ws/.s3cfg", "ws/auth.json",
)  # fmt: skip
_CANARY_FILES = (
    "home/.ssh/id_rsa",
    "home/.ssh/config",
    "home/.aws/credentials",
    "home/.netrc",
    "home/.bashrc",
    "home/victim.txt",
    "outside/victim.txt",
    "outside/victim_dir/a.txt",
    "outside/victim_dir/sub/b.txt",
    "ws/.env",
    *_RENAMED_SECRETS,
)
# Secrets known only by their content (a token in .git/config's remote URL, credentials
# in files with innocent names). Only *seen* counts for them: ketch itself reads these
# files to classify them, so an open is no effect.
_CONTENT_CANARIES = ("ws/.git/config", "ws/notes/deploy.yaml", "ws/config/settings.json")


def _empty(path: Path) -> bool:
    """An empty directory, or an empty regular file (not a link)."""
    try:
        info = path.lstat()
    except OSError:
        return False
    if stat.S_ISDIR(info.st_mode):
        return not any(os.scandir(path))
    return stat.S_ISREG(info.st_mode) and info.st_size == 0


def _rmtree(path: Path) -> None:
    def writable(func: object, target: str, _exc: object) -> None:
        with contextlib.suppress(OSError):
            os.chmod(os.path.dirname(target), 0o700)
            os.chmod(target, 0o700)
        with contextlib.suppress(OSError):
            if os.path.isdir(target) and not os.path.islink(target):
                shutil.rmtree(target)
            else:
                os.unlink(target)

    if path.is_symlink():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path, onerror=writable)


def default_base() -> Path:
    """Where worlds are built: ``KETCH_CANARY_ROOT``, else ``~/.cache/ketch-canaries``
    (not under /tmp: the sandbox's private /tmp would hide the outside world)."""
    chosen = os.environ.get("KETCH_CANARY_ROOT")
    base = Path(chosen) if chosen else Path(os.path.expanduser("~")) / ".cache" / "ketch-canaries"
    base.mkdir(parents=True, exist_ok=True)
    return base
