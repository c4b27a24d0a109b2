"""Choosing the compactor (``[compaction] compactor``) and running it."""

from __future__ import annotations

from collections.abc import Awaitable

from ketch.api import NoticeEvent
from ketch_compact.plan import build, make_plan
from ketch_context_kit.compaction import CompactionRequest, CompactionResult

KNOWN = ("deterministic", "model")


def run(request: CompactionRequest) -> CompactionResult | Awaitable[CompactionResult]:
    session = request.session
    from ketch_compact.settings import CompactorSettings

    settings = session.kernel.settings.of(CompactorSettings)
    name = settings.command_compactor if request.reason == "command" else settings.compactor
    plan = make_plan(request)
    for note in plan.notes:
        session.kernel.emit(session, NoticeEvent(level="warning", message=note))
    if name == "model" and plan.summarized and getattr(session, "provider", None) is not None:
        from ketch_compact.summarizer import summarize

        return summarize(plan)
    if name not in KNOWN:
        # This compactor runs last: no plugin answered for the one configured.
        warned = session.state.setdefault("compact", {})
        if warned.get("unknown") != name:
            warned["unknown"] = name
            session.kernel.emit(
                session,
                NoticeEvent(
                    level="warning",
                    message=f"no compactor named '{name}' is loaded; using the deterministic one",
                ),
            )
    return build(plan, None, "deterministic")
