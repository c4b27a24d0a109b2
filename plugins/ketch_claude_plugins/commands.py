"""What each ``ketch plugin`` action does. Every change happens under one lock, into a
fresh folder that replaces the old one only once complete: a failure (or Ctrl-C)
leaves the previous install as it was."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ketch.api import KetchError, UsageError
from ketch_claude_plugins import paths, registry
from ketch_claude_plugins.catalog import Catalog, git_url, inside, read_catalog, source_of
from ketch_claude_plugins.cli import confirm
from ketch_claude_plugins.items import Bundle
from ketch_claude_plugins.registry import Installed, MarketplaceRecord, locked, now, remove_tree

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Kernel
    from ketch_trust_kit import TrustItem


def say(line: str = "") -> None:
    print(line, flush=True)


def warn(line: str) -> None:
    print(f"ketch: {line}", file=sys.stderr, flush=True)


# --- marketplaces -----------------------------------------------------------------------


def _split_ref(text: str) -> tuple[str, str]:
    """``URL#ref`` and GitHub's ``owner/repo@ref``."""
    if "#" in text:
        url, ref = text.rsplit("#", 1)
        return url, ref
    if "://" not in text and "@" in text and ":" not in text:
        url, ref = text.rsplit("@", 1)
        return url, ref
    return text, ""


def _fresh(parent: Path, prefix: str) -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    return parent / f".{prefix}-{secrets.token_hex(4)}"


def _fetch_git(kernel: Kernel, url: str, ref: str) -> tuple[Path, str, Catalog]:
    """A marketplace cloned into a fresh folder, its commit and catalog."""
    from ketch_claude_plugins.fetch import clone

    staging = _fresh(paths.home() / "marketplaces", "clone")
    try:
        commit = clone(url, staging, kernel.environ, ref=ref)
        return staging, commit, read_catalog(staging)
    except BaseException:
        remove_tree(staging)
        raise


def _place(staging: Path, final: Path) -> None:
    """Put a complete folder where the old one was (the old one goes)."""
    old = final.with_name(f".old-{final.name}-{secrets.token_hex(4)}")
    if final.exists():
        os.replace(final, old)
    os.replace(staging, final)
    remove_tree(old)


def marketplace_add(kernel: Kernel, args: argparse.Namespace) -> int:
    text = args.source.strip()
    local = Path(text).expanduser()
    with locked():
        records = registry.marketplaces()
        if local.exists():
            root = local.resolve()
            if root.is_file():
                root = root.parent.parent  # .claude-plugin/marketplace.json
            catalog = read_catalog(root)
            _unused_name(records, catalog.name, str(root))
            record = MarketplaceRecord(catalog.name, "directory", str(root), added=now())
        elif text.startswith(("/", "./", "../", "~")):
            raise KetchError(f"{text}: no such directory")
        else:
            url, ref = _split_ref(text)
            url = git_url(url, "ketch plugin marketplace add")
            staging, commit, catalog = _fetch_git(kernel, url, ref)
            try:
                _unused_name(records, catalog.name, url)
                _place(staging, paths.marketplace_clone(catalog.name))
                catalog.root = paths.marketplace_clone(catalog.name)
            finally:
                remove_tree(staging)
            record = MarketplaceRecord(catalog.name, "git", url, ref, commit, added=now())
        record.updated = record.added
        records[catalog.name] = record
        registry.save_marketplaces(records)
    say(f"added marketplace {catalog.name} from {record.source}: {_count(catalog)}")
    for name in sorted(catalog.plugins):
        say(f"  {name}@{catalog.name}")
    for line in catalog.problems:
        warn(line)
    if catalog.plugins:
        say(f"install one with: ketch plugin install NAME@{catalog.name}")
    return 0


def _unused_name(records: dict[str, MarketplaceRecord], name: str, location: str) -> None:
    known = records.get(name)
    if known is not None and known.location != location:
        raise KetchError(
            f"a marketplace named {name} is already added (from {known.source}); "
            f"`ketch plugin marketplace remove {name}` first"
        )


def _count(catalog: Catalog) -> str:
    count = len(catalog.plugins)
    return f"{count} plugin{'s' if count != 1 else ''}"


def marketplace_list(kernel: Kernel, args: argparse.Namespace) -> int:
    records = registry.marketplaces()
    rows = []
    for record in records.values():
        try:
            catalog: Catalog | None = read_catalog(record.root)
            problem = ""
        except KetchError as exc:
            catalog, problem = None, exc.message
        rows.append((record, catalog, problem))
    if args.json:
        say(
            json.dumps(
                [
                    {
                        "name": r.name,
                        "source": r.kind,
                        "location": r.location,
                        "ref": r.ref or None,
                        "commit": r.commit or None,
                        "installLocation": str(r.root),
                        "plugins": sorted(c.plugins) if c else [],
                        "problem": p or None,
                    }
                    for r, c, p in rows
                ],
                indent=1,
            )
        )
        return 0
    if not rows:
        warn("no marketplace added (ketch plugin marketplace add PATH|GIT-URL)")
        return 0
    for record, catalog, problem in rows:
        state = _count(catalog) if catalog else f"unreadable: {problem}"
        say(f"{record.name}  {record.kind} {record.source}  ({state})")
    return 0


def marketplace_update(kernel: Kernel, args: argparse.Namespace) -> int:
    records = registry.marketplaces()
    names = [args.name] if args.name else sorted(records)
    if args.name and args.name not in records:
        raise KetchError(f"no marketplace named {args.name} (ketch plugin marketplace list)")
    failed = 0
    for name in names:
        try:
            catalog = refresh(kernel, records[name])
        except KetchError as exc:
            warn(f"{name}: {exc.message}")
            failed += 1
            continue
        say(f"{name}: {_count(catalog)}")
        for line in catalog.problems:
            warn(line)
    return 1 if failed else 0


def refresh(kernel: Kernel, record: MarketplaceRecord) -> Catalog:
    """Fetch a git marketplace again (a fresh clone replaces the old one), or read a
    directory one again; its catalog."""
    if record.kind != "git":
        return read_catalog(record.root)
    staging, commit, catalog = _fetch_git(kernel, record.location, record.ref)
    try:
        if catalog.name != record.name:
            raise KetchError(
                f"{record.source} now calls itself {catalog.name}, not {record.name}; "
                "remove it and add it again"
            )
        with locked():
            _place(staging, paths.marketplace_clone(record.name))
            catalog.root = paths.marketplace_clone(record.name)
            records = registry.marketplaces()
            if record.name in records:
                records[record.name].commit = commit
                records[record.name].updated = now()
                registry.save_marketplaces(records)
    finally:
        remove_tree(staging)
    return catalog


def marketplace_remove(kernel: Kernel, args: argparse.Namespace) -> int:
    records = registry.marketplaces()
    record = records.get(args.name)
    if record is None:
        raise KetchError(f"no marketplace named {args.name} (ketch plugin marketplace list)")
    for plugin in [p for p in registry.installed().values() if p.marketplace == record.name]:
        _uninstall(kernel, plugin)
    with locked():
        if record.kind == "git":
            remove_tree(paths.marketplace_clone(record.name))
        records = registry.marketplaces()
        records.pop(record.name, None)
        registry.save_marketplaces(records)
    say(f"removed marketplace {record.name}")
    return 0


# --- finding a plugin -----------------------------------------------------------------


def _find_entry(kernel: Kernel, text: str) -> tuple[MarketplaceRecord, Catalog, dict[str, Any]]:
    name, _, market = text.partition("@")
    records = registry.marketplaces()
    if market:
        if market not in records:
            raise KetchError(f"no marketplace named {market} (ketch plugin marketplace list)")
        candidates = [records[market]]
    else:
        candidates = list(records.values())
    found = []
    for record in candidates:
        try:
            catalog = read_catalog(record.root)
        except KetchError as exc:
            if market:
                raise
            warn(f"{record.name}: {exc.message}")
            continue
        if name in catalog.plugins:
            found.append((record, catalog, catalog.plugins[name]))
    if not found:
        where = f"marketplace {market}" if market else "any marketplace added"
        raise KetchError(f"no plugin {name} in {where} (ketch plugin list --available)")
    if len(found) > 1:
        names = ", ".join(f"{name}@{r.name}" for r, _, _ in found)
        raise UsageError(f"{name} is in several marketplaces: name one ({names})")
    return found[0]


def _find_installed(text: str) -> Installed:
    records = registry.installed()
    if "@" in text:
        found = records.get(text)
        if found is None:
            raise KetchError(f"{text} is not installed (ketch plugin list)")
        return found
    matches = [r for r in records.values() if r.name == text]
    if not matches:
        raise KetchError(f"{text} is not installed (ketch plugin list)")
    if len(matches) > 1:
        raise UsageError(
            f"{text} is installed from several marketplaces: name one ({', '.join(r.id for r in matches)})"
        )
    return matches[0]


# --- staging: the plugin's files, fetched, before anything is replaced ----------------------


@dataclass
class Staged:
    bundle: Bundle
    version: str
    source: str
    digest: str
    entry: dict[str, Any]
    commit: str = ""


def _stage(
    kernel: Kernel, record: MarketplaceRecord, catalog: Catalog, entry: dict[str, Any]
) -> Staged:
    from ketch_claude_plugins.bundle import read_layout
    from ketch_claude_plugins.fetch import clone, copy_plugin, tree_digest

    name = str(entry["name"])
    plugin_id = f"{name}@{catalog.name}"
    home = paths.plugin_home(plugin_id)
    staging = home / ".staging"
    remove_tree(staging)
    root = staging / name
    source = source_of(catalog, entry)
    try:
        if source.path is not None:
            notes = copy_plugin(source.path, root, catalog.root)
            commit = record.commit
        else:
            checkout = staging / ".clone"
            commit = clone(source.url, checkout, kernel.environ, ref=source.ref, sha=source.sha)
            tree = checkout / source.subdir if source.subdir else checkout
            if not tree.is_dir() or not inside(tree, checkout):
                raise KetchError(f"{source.describe()}: no folder {source.subdir} in it")
            notes = copy_plugin(tree, root, checkout)
            remove_tree(checkout)
        layout = read_layout(root, entry, name)
    except BaseException:
        remove_tree(staging)
        raise
    digest = tree_digest(root)
    version = layout.version or (commit[:12] if commit else "") or digest[:12]
    bundle = Bundle(plugin_id, name, root, home / "data", staging / "pins.json", layout, notes)
    where = (
        f"{catalog.name} ./{source.path.relative_to(catalog.root).as_posix()}"
        if source.path is not None and source.path.is_relative_to(catalog.root)
        else source.describe()
    )
    return Staged(bundle, version, where, digest, entry, commit or "")


def _show(
    kernel: Kernel, bundle: Bundle, items: list[TrustItem], pins: dict[str, Any], header: str
) -> list[TrustItem]:
    """Say what the plugin holds and every item it runs (with its state); the items not
    pinned yet."""
    from ketch_trust_kit.listing import lines

    say(header)
    if bundle.layout.description:
        say(f"  {bundle.layout.description}")
    for kind, title in (("commands", "commands"), ("skills", "skills"), ("agents", "agents")):
        names = bundle.names(kind)
        if names:
            shown = [f"/{n}" for n in names] if kind != "agents" else names
            say(f"  {title}: {', '.join(shown)}")
    hooks = [e for e in bundle.hooks() if e.item is not None]
    if hooks:
        say(f"  hooks: {', '.join(sorted({e.event for e in hooks}))}")
    servers = [e for e in bundle.servers() if e.item is not None]
    if servers:
        say(f"  MCP servers: {', '.join(e.name for e in servers)}")
    for line in bundle.unused():
        say(f"  - {line}")
    pending = [i for i in items if i.digest not in pins]
    if items:
        say(
            f"It runs {len(items)} item(s); each is pinned and runs only while it is as shown here:"
        )
        for line in lines(items, pins, pending):
            say(line)
    else:
        say("It runs nothing (no hook, MCP server, !`cmd` line, skill script or agent).")
    return pending


def _settle(
    kernel: Kernel,
    staged: Staged,
    shown: list[TrustItem],
    existing: Installed | None,
    enabled: bool,
) -> Installed:
    """Replace the installed files with the staged ones and pin exactly what was shown."""
    from ketch_trust_kit import PinStore

    bundle = staged.bundle
    home = paths.plugin_home(bundle.id)
    final = home / bundle.name
    with locked():
        _place(bundle.root, final)
        remove_tree(home / ".staging")
        record = Installed(
            name=bundle.name,
            marketplace=bundle.id.split("@", 1)[1],
            version=staged.version,
            commit=staged.commit,
            source=staged.source,
            digest=staged.digest,
            enabled=enabled,
            installed=existing.installed if existing else now(),
            updated=now(),
            entry=staged.entry,
        )
        from ketch_claude_plugins.active import bundle_of

        placed = bundle_of(record)
        items = placed.items(kernel)
        if {i.digest for i in items} != {i.digest for i in shown}:
            raise KetchError(
                f"{bundle.id}: its files changed while it was being installed; nothing pinned "
                f"(run `ketch plugin trust {bundle.id}` to review it)"
            )
        store = PinStore(record.pins)
        store.unpin(final)
        store.pin(final, items)
        record.data.mkdir(parents=True, exist_ok=True)
        record.save()
    return record


def install(kernel: Kernel, args: argparse.Namespace) -> int:
    marketplace, catalog, entry = _find_entry(kernel, args.plugin)
    plugin_id = f"{entry['name']}@{catalog.name}"
    existing = registry.installed().get(plugin_id)
    if existing is not None:
        if args.scope == "project":
            return _enable_here(kernel, existing)
        raise KetchError(
            f"{plugin_id} is already installed (ketch plugin update {plugin_id} fetches it again)"
        )
    staged = _stage(kernel, marketplace, catalog, entry)
    try:
        items = staged.bundle.items(kernel)
        _show(
            kernel, staged.bundle, items, {}, f"{plugin_id} {staged.version} (from {staged.source})"
        )
        where = "in this workspace" if args.scope == "project" else "everywhere"
        answer = confirm(
            f"Install {plugin_id} ({where}) and trust these {len(items)} item(s)?", args.yes
        )
        if not answer:
            if answer is None:
                warn(
                    f"nothing installed: run `ketch plugin install {args.plugin} --yes` to install it and "
                    "trust the items above (only after reading them), or run it in a terminal"
                )
            else:
                say("nothing installed")
            return 1
        user_on = args.scope == "user" and staged.bundle.layout.default_enabled
        record = _settle(kernel, staged, items, None, user_on)
    finally:
        home = paths.plugin_home(plugin_id)
        remove_tree(home / ".staging")
        if not (home / "install.json").exists():
            remove_tree(home)  # declined or failed: no trace of it
    say(f"installed {record.id} {record.version} ({len(items)} item(s) pinned) in {record.home}")
    if args.scope == "project":
        _enable_here(kernel, record)
    elif not user_on:
        say(f"it starts disabled (its manifest says so): ketch plugin enable {record.id}")
    return 0


def _enable_here(kernel: Kernel, record: Installed) -> int:
    """Turn a plugin on in this workspace's config, and trust that entry (you typed it)."""
    from ketch_claude_plugins.workspace import config_path, edit, enable_item, written
    from ketch_trust_kit import PinStore

    edit(kernel.workspace, record.id, enable=True)
    index = written(kernel.workspace).get("enabled", []).index(record.id)
    PinStore().pin(kernel.workspace, [enable_item(kernel, record.id, index)])
    say(f"{record.id} is on in {kernel.workspace} ({config_path(kernel.workspace)})")
    return 0


def update(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_trust_kit import PinStore

    record = _find_installed(args.plugin)
    marketplaces = registry.marketplaces()
    market = marketplaces.get(record.marketplace)
    if market is None:
        raise KetchError(
            f"its marketplace {record.marketplace} was removed; nothing to update from"
        )
    catalog = refresh(kernel, market)
    entry = catalog.plugins.get(record.name)
    if entry is None:
        raise KetchError(f"{record.marketplace} no longer lists {record.name}")
    staged = _stage(kernel, registry.marketplaces()[market.name], catalog, entry)
    try:
        items = staged.bundle.items(kernel)
        pins = PinStore(record.pins).pins(record.root)
        if (
            staged.digest == record.digest
            and entry == record.entry
            and all(i.digest in pins for i in items)
        ):
            say(f"{record.id} is up to date ({record.version})")
            return 0
        pending = _show(
            kernel,
            staged.bundle,
            items,
            pins,
            f"{record.id}: {_moved(record, staged)} (from {staged.source})",
        )
        answer = confirm(
            f"Update {record.id} and trust these {len(pending)} new or changed item(s)?", args.yes
        )
        if not answer:
            if answer is None:
                warn(
                    f"nothing updated: run `ketch plugin update {record.id} --yes` (only after reading the list above)"
                )
            else:
                say("nothing updated")
            return 1
        new = _settle(kernel, staged, items, record, record.enabled)
    finally:
        remove_tree(paths.plugin_home(record.id) / ".staging")
    say(f"updated {new.id} to {new.version}")
    return 0


def _moved(record: Installed, staged: Staged) -> str:
    """The version an update goes from and to, with the commits when they differ."""
    moved = f"{record.version} -> {staged.version}"
    if record.commit != staged.commit and staged.commit:
        moved += f", commit {record.commit[:12] or '?'} -> {staged.commit[:12]}"
    return moved


def trust(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_claude_plugins.active import bundle_of
    from ketch_trust_kit import PinStore

    record = _find_installed(args.plugin)
    bundle = bundle_of(record)
    items = bundle.items(kernel)
    store = PinStore(record.pins)
    pins = store.pins(record.root)
    pending = _show(kernel, bundle, items, pins, f"{record.id} {record.version} (in {record.root})")
    if not pending:
        say(f"all {len(items)} item(s) of {record.id} are trusted")
        return 0
    answer = confirm(f"Trust these {len(pending)} item(s) of {record.id}?", args.yes)
    if not answer:
        if answer is None:
            warn(
                f"nothing trusted: run `ketch plugin trust {record.id} --yes` (only after reading the list above)"
            )
        return 1
    with locked():
        store.unpin(record.root)
        store.pin(record.root, items)
    say(f"trusted {len(pending)} item(s) of {record.id}")
    return 0


def enable(kernel: Kernel, args: argparse.Namespace) -> int:
    return _switch(kernel, args, True)


def disable(kernel: Kernel, args: argparse.Namespace) -> int:
    return _switch(kernel, args, False)


def _switch(kernel: Kernel, args: argparse.Namespace, on: bool) -> int:
    from ketch_claude_plugins.workspace import edit

    record = _find_installed(args.plugin)
    if args.scope == "project":
        if on:
            return _enable_here(kernel, record)
        edit(kernel.workspace, record.id, enable=False)
        say(f"{record.id} is off in {kernel.workspace}")
        return 0
    with locked():
        record.enabled = on
        record.save()
    say(f"{record.id} is {'on' if on else 'off'} (user scope)")
    return 0


def uninstall(kernel: Kernel, args: argparse.Namespace) -> int:
    record = _find_installed(args.plugin)
    _uninstall(kernel, record)
    return 0


def _uninstall(kernel: Kernel, record: Installed) -> None:
    """Everything of the plugin goes: its folder (files, pins, data), this workspace's
    entries for it and their pins, and what other plugins kept about it."""
    from ketch_claude_plugins.active import bundle_of
    from ketch_claude_plugins.workspace import edit, enable_item
    from ketch_trust_kit import PinStore

    servers: list[str] = []
    with contextlib.suppress(KetchError):  # unreadable: nothing of its servers to forget
        servers = [e.name for e in bundle_of(record).servers()]
    with locked():
        remove_tree(record.home)
    if edit(kernel.workspace, record.id, enable=None):
        PinStore().unpin(kernel.workspace, [enable_item(kernel, record.id, 0).digest])
    if hasattr(kernel.pm.hook, "claude_plugins_removed"):
        kernel.hooks.call(
            "claude_plugins_removed", kernel=kernel, plugin=record.id, servers=servers
        )
    say(f"uninstalled {record.id} (removed {record.home})")


def show_list(kernel: Kernel, args: argparse.Namespace) -> int:
    from ketch_claude_plugins.active import bundle_of
    from ketch_claude_plugins.workspace import choice
    from ketch_trust_kit import PinStore
    from ketch_trust_kit.listing import state

    records = registry.installed()
    for line in registry.problems():
        warn(line)
    if args.available:
        rows: list[dict[str, Any]] = []
        for market in registry.marketplaces().values():
            try:
                catalog = read_catalog(market.root)
            except KetchError as exc:
                warn(f"{market.name}: {exc.message}")
                continue
            for name, entry in sorted(catalog.plugins.items()):
                plugin_id = f"{name}@{market.name}"
                rows.append(
                    {
                        "id": plugin_id,
                        "description": str(entry.get("description") or ""),
                        "installed": plugin_id in records,
                    }
                )
        if args.json:
            say(json.dumps(rows, indent=1))
        for row in rows if not args.json else []:
            mark = " (installed)" if row["installed"] else ""
            say(f"{row['id']}{mark}  {row['description'][:100]}")
        return 0
    here = choice(kernel)
    rows = []  # one dict per installed plugin
    for record in records.values():
        try:
            bundle = bundle_of(record)
            items = bundle.items(kernel)
            pins = PinStore(record.pins).pins(record.root)
            states = [state(i, pins) for i in items]
            problem = ""
        except KetchError as exc:
            states, problem = [], exc.message
        on_here = (record.enabled or record.id in here.enabled) and record.id not in here.disabled
        rows.append(
            {
                "id": record.id,
                "version": record.version,
                "source": record.source,
                "commit": record.commit or None,
                "enabled": record.enabled,
                "active_here": on_here,
                "items": len(states),
                "changed": states.count("changed"),
                "new": states.count("new"),
                "problem": problem or None,
                "path": str(record.root),
            }
        )
    if args.json:
        say(json.dumps(rows, indent=1))
        return 0
    if not rows:
        warn("no Claude Code plugin installed (ketch plugin install NAME@MARKETPLACE)")
        return 0
    for row in rows:
        scope = "on" if row["enabled"] else "off"
        here_text = "runs here" if row["active_here"] else "not here"
        held = row["changed"] + row["new"]
        trust_text = (
            f"{held} of {row['items']} item(s) held back: ketch plugin trust {row['id']}"
            if held
            else f"{row['items']} item(s) pinned"
        )
        say(f"{row['id']}  {row['version']}  user scope: {scope}, {here_text}; {trust_text}")
        if row["problem"]:
            say(f"  not loaded: {row['problem']}")
    return 0
