"""Which servers this workspace has: the built-ins whose program is found, and the
``[lsp.servers.NAME]`` tables, each with where it came from and whether it may start.

A built-in's program is looked for, in order, on ``PATH`` (never a relative entry nor
one inside the workspace), in ketch's own environment (``pip install basedpyright``
beside ketch), and in the workspace's virtualenv (``.venv``, ``venv``). The first two
are the person's own programs. One found only in the workspace's virtualenv is a
program the repository controls: it is a trust item (its entry script pinned by
content), started only while the person has it pinned. So is every server table of the
workspace's ``.ketch/config.toml`` (the trust plugin holds it back until pinned; it is
checked again against the files as they are right before it starts).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import StashKey
from ketch_lsp.catalog import BUILTINS, LANGUAGE_IDS, Builtin
from ketch_lsp.settings import LspSettings, ServerSettings

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem

VENV_DIRS = (".venv", "venv")
KIND = "language server"
SOURCE = ".ketch/config.toml"

BUILTIN = "built-in"
YOURS = "your config"
WORKSPACE = "workspace config"
WORKSPACE_VENV = "workspace virtualenv"


@dataclass(frozen=True)
class ServerSpec:
    """One server as it would start: ``argv`` (its program resolved, or None when not
    found), the files it serves, and ``item`` when it needs the person's trust."""

    name: str
    argv: tuple[str, ...] | None
    patterns: tuple[str, ...]
    root_markers: tuple[str, ...]
    origin: str
    language_id: str | None = None
    initialization_options: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    item: TrustItem | None = None
    wanted: str = ""  # the program looked for (for "not found")

    def serves(self, path: Path) -> bool:
        from ketch_policy_kit.globs import match_any_name

        return match_any_name(path.name, self.patterns)

    def language_of(self, path: Path) -> str:
        return self.language_id or LANGUAGE_IDS.get(path.suffix.lower(), path.suffix.lstrip("."))

    @property
    def found(self) -> bool:
        return self.argv is not None


SPECS = StashKey[list[ServerSpec]]()


def _inside(path: str | Path, root: Path) -> bool:
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def _own_bin_dirs() -> list[str]:
    """ketch's own environment: where ``pip install`` beside ketch puts programs."""
    dirs = [os.path.dirname(sys.executable), os.path.join(sys.prefix, "bin")]
    return list(dict.fromkeys(d for d in dirs if os.path.isabs(d)))


def find_program(name: str, workspace: Path, environ: dict[str, str]) -> tuple[str, bool] | None:
    """Where program ``name`` is, and whether that is inside the workspace: ``PATH``
    (outside the workspace) first, then ketch's own environment, then the workspace's
    virtualenv."""
    import shutil

    from ketch_git_kit.locate import executable

    found = executable(name, environ, avoid=workspace)
    if found:
        return found, False
    for directory in _own_bin_dirs():
        if _inside(directory, workspace):
            continue
        hit = shutil.which(name, path=directory)
        if hit:
            return hit, False
    for venv in VENV_DIRS:
        hit = shutil.which(name, path=str(workspace / venv / "bin"))
        if hit and _inside(hit, workspace):
            return hit, True
    return None


def workspace_venv(workspace: Path) -> Path | None:
    """The workspace's virtualenv, if it has one (``.venv/pyvenv.cfg``)."""
    for venv in VENV_DIRS:
        if (workspace / venv / "pyvenv.cfg").is_file():
            return workspace / venv
    return None


def _relative(path: str, workspace: Path) -> str:
    try:
        return Path(path).resolve().relative_to(workspace.resolve()).as_posix()
    except (ValueError, OSError):
        return path


def venv_item(name: str, argv: list[str], workspace: Path) -> TrustItem:
    """A built-in server whose program is the workspace's own (its virtualenv)."""
    from ketch_trust_kit import make_item

    program = _relative(argv[0], workspace)
    shown = " ".join([program, *argv[1:]])
    return make_item(
        KIND,
        name,
        program,
        {"argv": [program, *argv[1:]]},
        shown,
        workspace=workspace,
        files=[Path(argv[0])],
        note="a program of the workspace's virtualenv; it runs in the sandbox",
    )


def table_item(kernel: Kernel, name: str, table: Any) -> TrustItem:
    """A ``[lsp.servers.NAME]`` table of the workspace's config: everything in it
    (command, settings, environment), and the workspace files its command runs."""
    import json

    from ketch_trust_kit import make_item

    table = table if isinstance(table, dict) else {"value": table}
    command = table.get("command")
    words = command.split() if isinstance(command, str) else command
    argv = [str(w) for w in words] if isinstance(words, list) else None
    rest = {k: v for k, v in table.items() if k != "command"}
    shown = "; ".join(
        part
        for part in (
            " ".join(argv) if argv else "",
            json.dumps(rest, sort_keys=True, default=str) if rest else "",
        )
        if part
    )
    return make_item(
        KIND,
        str(name),
        SOURCE,
        table,
        shown or "(empty)",
        workspace=kernel.workspace,
        command=argv,
        setting=("lsp", "servers", str(name)),
    )


def setting_items(kernel: Kernel, value: Any) -> list[TrustItem]:
    if not isinstance(value, dict):
        return []
    return [table_item(kernel, name, table) for name, table in value.items()]


def venv_items(kernel: Kernel) -> list[TrustItem]:
    """The built-ins this workspace would run from its own virtualenv (for ``ketch trust``)."""
    environ = dict(getattr(kernel, "environ", None) or os.environ)
    items = []
    for builtin in BUILTINS:
        for program, args in builtin.programs:
            found = find_program(program, kernel.workspace, environ)
            if found is None:
                continue
            if found[1]:
                items.append(venv_item(builtin.name, [found[0], *args], kernel.workspace))
            break
    return items


def _workspace_table(kernel: Kernel, name: str) -> dict[str, Any] | None:
    from ketch_trust_kit import workspace_config

    servers = (workspace_config(kernel).get("lsp") or {}).get("servers") or {}
    table = servers.get(name) if isinstance(servers, dict) else None
    return table if isinstance(table, dict) else None


def _merge(builtin: Builtin | None, table: ServerSettings | None) -> dict[str, Any]:
    merged: dict[str, Any] = {
        "patterns": list(builtin.patterns) if builtin else [],
        "root_markers": list(builtin.root_markers) if builtin else [],
        "initialization_options": dict(builtin.initialization_options) if builtin else {},
        "settings": dict(builtin.settings) if builtin else {},
        "env": {},
        "language_id": None,
        "command": None,
    }
    if table is not None:
        for key in table.model_fields_set:
            if key != "enabled":
                merged[key] = getattr(table, key)
    return merged


def resolve(kernel: Kernel) -> list[ServerSpec]:
    """Every server of this kernel's workspace (found or not), built once per kernel."""
    if SPECS in kernel.stash:
        return kernel.stash[SPECS]
    settings = kernel.settings.of(LspSettings)
    workspace = Path(kernel.workspace)
    environ = dict(getattr(kernel, "environ", None) or os.environ)
    specs: list[ServerSpec] = []
    tables = settings.servers
    for builtin in BUILTINS:
        table = tables.get(builtin.name)
        if table is not None and not table.enabled:
            continue
        specs.append(_spec(kernel, builtin.name, builtin, table, workspace, environ))
    for name, table in tables.items():
        if name in {b.name for b in BUILTINS} or not table.enabled:
            continue
        specs.append(_spec(kernel, name, None, table, workspace, environ))
    kernel.stash[SPECS] = specs
    return specs


def _spec(
    kernel: Kernel,
    name: str,
    builtin: Builtin | None,
    table: ServerSettings | None,
    workspace: Path,
    environ: dict[str, str],
) -> ServerSpec:
    merged = _merge(builtin, table)
    written = _workspace_table(kernel, name) if table is not None else None
    origin = BUILTIN if table is None else YOURS
    item: TrustItem | None = None
    if written is not None and table is not None and _wrote_it(written, table):
        origin, item = WORKSPACE, table_item(kernel, name, written)
    argv: list[str] | None = None
    wanted = ""
    command = merged["command"]
    if command:
        wanted = command[0]
        program = _program(command[0], workspace, environ)
        argv = [program, *command[1:]] if program else None
    elif builtin is not None:
        wanted = " or ".join(program for program, _ in builtin.programs)
        for program, args in builtin.programs:
            found = find_program(program, workspace, environ)
            if found is None:
                continue
            argv = [found[0], *args]
            if found[1] and item is None:
                origin, item = WORKSPACE_VENV, venv_item(name, argv, workspace)
            if name == "typescript":
                _own_typescript(found[0], merged["initialization_options"])
            break
    return ServerSpec(
        name=name,
        argv=tuple(argv) if argv else None,
        patterns=tuple(merged["patterns"] or ()),
        root_markers=tuple(merged["root_markers"] or ()),
        origin=origin,
        language_id=merged["language_id"],
        initialization_options=dict(merged["initialization_options"] or {}),
        settings=dict(merged["settings"] or {}),
        env=dict(merged["env"] or {}),
        item=item,
        wanted=wanted,
    )


def _own_typescript(program: str, options: dict[str, Any]) -> None:
    """typescript-language-server runs the ``tsserver`` of the workspace's
    ``node_modules`` unless told otherwise: point it at the TypeScript installed beside
    the server (the person's own), so it does not run the repository's copy."""
    if "tsserver" in options:
        return
    real = Path(os.path.realpath(program))
    for parent in real.parents:
        if parent.name == "node_modules":
            tsserver = parent / "typescript" / "lib" / "tsserver.js"
            if tsserver.is_file():
                options["tsserver"] = {"path": str(tsserver)}
            return


def _wrote_it(written: dict[str, Any], table: ServerSettings) -> bool:
    """Whether the effective table has every value the workspace wrote (then the
    workspace's table applied: it was pinned when settings loaded)."""
    from pydantic import ValidationError

    try:
        parsed = ServerSettings.model_validate(written)
    except ValidationError:
        return False
    return all(getattr(parsed, key) == getattr(table, key) for key in parsed.model_fields_set)


def _program(word: str, workspace: Path, environ: dict[str, str]) -> str | None:
    """A configured command's program: a path as written (relative to the workspace),
    else a name looked up like a built-in's."""
    if os.sep in word or (os.altsep and os.altsep in word):
        path = Path(os.path.expanduser(word))
        path = path if path.is_absolute() else workspace / path
        return str(path) if os.access(path, os.X_OK) and path.is_file() else None
    found = find_program(word, workspace, environ)
    return found[0] if found else None


def fresh_item(kernel: Kernel, spec: ServerSpec) -> TrustItem | None:
    """``spec``'s item built again from the files as they are now (a script its command
    names may have changed since the spec was made)."""
    if spec.item is None:
        return None
    if spec.origin == WORKSPACE_VENV and spec.argv:
        return venv_item(spec.name, list(spec.argv), Path(kernel.workspace))
    written = _workspace_table(kernel, spec.name)
    return table_item(kernel, spec.name, written) if written is not None else spec.item


def usable(kernel: Kernel) -> bool:
    """Whether any server could start here: found, and the person's own or pinned."""
    from ketch_trust_kit import is_pinned

    return any(
        spec.found and (spec.item is None or is_pinned(kernel.workspace, spec.item))
        for spec in resolve(kernel)
    )


def for_file(specs: list[ServerSpec], path: Path) -> list[ServerSpec]:
    return [spec for spec in specs if spec.found and spec.serves(path)]


def project_root(path: Path, markers: tuple[str, ...], workspace: Path) -> Path:
    """The nearest directory from ``path`` up to the workspace that holds one of
    ``markers`` (the workspace itself when none does): one server per such root."""
    root = workspace.resolve()
    current = path.parent
    while _inside(current, root):
        if any((current / marker).exists() for marker in markers):
            return current
        if current == root or current.parent == current:
            break
        current = current.parent
    return root
