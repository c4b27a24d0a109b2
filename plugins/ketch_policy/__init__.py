"""The permission engine: modes, profiles, scoped rules, shell analysis and approvals
(docs/permissions.md has the whole picture and the profile table).

Every proposed call gets this plugin's vote (the hard guards in ``ketch_guards`` vote
beside it; deny > ask > allow). "Always allow" answers are persisted per workspace
through the store and loaded when a session starts; "allow for this session" ones
never outlive the session. A workspace's own allow rules apply one by one, as the
person trusts them (the trust plugin; this plugin lists each rule as an item).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ketch.api import Command, StashKey, hookimpl

if TYPE_CHECKING:  # pragma: no cover
    import argparse

    from ketch.api import (
        Event,
        Kernel,
        Mode,
        PermissionSnapshot,
        Profile,
        ProposedCall,
        Session,
        SettingsSection,
        Vote,
    )


@hookimpl
def ketch_register_modes(register: Callable[[Mode], None]) -> None:
    from ketch_policy.vocabulary import MODES

    for mode in MODES:
        register(mode)


@hookimpl
def ketch_register_profiles(register: Callable[[Profile], None]) -> None:
    from ketch_policy.vocabulary import PROFILES

    for profile in PROFILES:
        register(profile)


@hookimpl
def ketch_register_settings(register: Callable[[SettingsSection], None]) -> None:
    from ketch_policy.settings import PERMISSIONS

    register(PERMISSIONS)


@hookimpl
def ketch_permission_rules(session: Session) -> dict[str, list[str]]:
    from ketch_policy.settings import PermissionsSettings

    perms = session.kernel.settings.of(PermissionsSettings)
    # ``[permissions.run]``: rules given for this run only (--allow/--ask/--deny, the
    # command line's layer), added to, never replacing, the rules of the config files.
    run = (perms.model_extra or {}).get("run")
    run = run if isinstance(run, dict) else {}

    def extra(kind: str) -> list[str]:
        value = run.get(kind)
        return [str(v) for v in value] if isinstance(value, list) else []

    from ketch_policy_kit.approvals import session_approvals

    rules = {kind: [*getattr(perms, kind), *extra(kind)] for kind in ("allow", "ask", "deny")}
    return {**rules, "approvals": list(session_approvals(session))}


@hookimpl
def ketch_add_cli_options(parser: argparse.ArgumentParser) -> None:
    from ketch_policy.cli import add_options

    add_options(parser)


@hookimpl
def ketch_policy_vote(
    call: ProposedCall, snapshot: PermissionSnapshot, session: Session
) -> Vote | None:
    from ketch_policy.approvals import with_saved
    from ketch_policy.decide import vote

    return vote(call, with_saved(session, snapshot))


@hookimpl(optionalhook=True)
def trust_setting_items(kernel: Kernel, key: tuple[str, ...], value: Any) -> list[Any] | None:
    """Each allow rule a workspace's config sets is an item of its own."""
    if key != ("permissions", "allow") or not isinstance(value, list):
        return None
    from ketch_trust_kit import make_item

    return [
        make_item(
            "allow rule",
            str(rule),
            ".ketch/config.toml",
            {"allow": rule},
            f"permissions.allow: {rule}",
            workspace=kernel.workspace,
            setting=(*key, index),
        )
        for index, rule in enumerate(value)
    ]


@hookimpl
def ketch_session_start(session: Session) -> None:
    from ketch.api import NoticeEvent
    from ketch_policy.approvals import load_into, load_later
    from ketch_policy_kit.rules import rules_of

    notices = list(rules_of(session.snapshot().rules).errors)
    problem = None
    if session.kernel.hooks.first("store_pending", kernel=session.kernel):
        load_later(session)  # the store opens beside the first request: loaded at the first vote
    else:
        problem = load_into(session)
    if problem:
        notices.append(problem)
    for notice in notices:
        session.kernel.emit(session, NoticeEvent(level="warning", message=notice))
    # Classify the workspace's files in the background (names and content, cached by
    # file identity), so the first proof of a recursive read does not read them all.
    # Started when the model first answers: no call can come earlier, and before it the
    # reads would compete with everything on the first request's path.
    import threading

    from ketch_secret_kit.files import warm

    session.stash[WARM] = threading.Thread(
        target=warm, args=(session.workspace,), name="ketch-secret-warm", daemon=True
    ).start


# The workspace's classification, waiting for the session's first answer.
WARM = StashKey[Callable[[], None]]()
# Events that only come once the model answered (or failed to).
_ANSWERED = frozenset({"text_delta", "reasoning_delta", "tool_call", "turn_end", "error"})


@hookimpl
def ketch_event(session: Session, event: Event) -> None:
    kind = getattr(event, "type", None)
    start = session.stash.pop(WARM, None) if kind in _ANSWERED else None
    if start is not None:
        start()
    if kind != "permission" or not getattr(event, "approved", False):
        return
    remembered = getattr(event, "remembered", None)
    if remembered:  # "for this session" (or always): this policy keeps the session's approvals
        from ketch_policy_kit.approvals import approve_for_session

        approve_for_session(session, remembered)
    scope = getattr(event, "scope", None)
    if not scope:
        return
    from ketch.api import NoticeEvent
    from ketch_policy.approvals import remember_always

    problem = remember_always(session, scope)
    if problem:
        session.kernel.emit(session, NoticeEvent(level="warning", message=problem))


@hookimpl
def ketch_register_commands(register: Callable[[Command], None]) -> None:
    from ketch_policy import commands as c

    register(
        Command(
            name="mode",
            help="show or switch the mode: /mode plan | /mode build",
            slash=True,
            slash_run=c.slash_mode,
        )
    )
    register(
        Command(
            name="profile",
            help="show or switch the profile: manual | assisted | full-access",
            slash=True,
            slash_run=c.slash_profile,
        )
    )
    register(
        Command(
            name="permissions",
            help="list permission rules and saved approvals; revoke an approval",
            cli=True,
            slash=True,
            configure=c.configure_permissions,
            run=c.run_permissions,
            slash_run=c.slash_permissions,
        )
    )
