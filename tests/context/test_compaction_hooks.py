"""The hooks the compact plugin declares: a third-party compactor answers first, and
plugins (user hooks, the SDK's) hear before and after a compaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ketch_compact
from ketch import hookimpl
from ketch.errors import ContextOverflow
from ketch.messages import Message
from ketch.testing import Harness, text
from ketch_context_kit.compaction import CompactionRequest, CompactionResult
from tests.kernel.kit import tools_plugins


def make(
    tmp_path: Path, script: list[dict[str, Any]], *extra: tuple[str, Any], **kw: Any
) -> Harness:
    plugins, _ = tools_plugins("allow")
    return Harness.create(
        tmp_path, script=script, plugins=[*plugins, *extra], bundled=["guards", "budget"], **kw
    )


class Halver:
    def __init__(self) -> None:
        self.requests: list[CompactionRequest] = []
        self.events: list[str] = []

    @hookimpl(optionalhook=True)
    def compact_compactor(self, request: CompactionRequest) -> CompactionResult:
        self.requests.append(request)
        summary = Message.user("[summary of earlier turns]", synthetic=True)
        kept = (summary, *request.messages[-1:])
        return CompactionResult(
            messages=kept,
            before_tokens=1000,
            after_tokens=10,
            compactor="halver",
            record=[{"replaced": len(request.messages) - 1}],
        )

    @hookimpl(optionalhook=True)
    def compact_before(self, session: Any, reason: str) -> None:
        self.events.append(f"before:{reason}")

    @hookimpl(optionalhook=True)
    def compact_after(self, session: Any, result: CompactionResult) -> None:
        self.events.append(f"after:{result.compactor}")


def test_compact_compactor_answers_before_the_bundled_ones(tmp_path: Path) -> None:
    halver = Halver()
    h = make(
        tmp_path,
        [text("a" * 8000), text("b")],
        ("halver", halver),
        ("compact", ketch_compact),
        context_window=8_000,
    )
    h.run("first " + "x" * 8000)
    h.run("second")
    assert halver.requests and halver.requests[0].reason == "auto"
    assert h.provider.requests[-1].messages[0].text == "[summary of earlier turns]"
    assert h.of_type("compaction")[0].compactor == "halver"
    # The saved transcript is untouched: it still starts with the first prompt.
    assert h.session.transcript[0].text.startswith("first ")


def test_compact_before(tmp_path: Path) -> None:
    halver = Halver()
    h = make(
        tmp_path,
        [text("a" * 8000), text("b")],
        ("halver", halver),
        ("compact", ketch_compact),
        context_window=8_000,
    )
    h.run("first " + "x" * 8000)
    h.run("second")
    assert halver.events[0] == "before:auto"


def test_compact_after(tmp_path: Path) -> None:
    halver = Halver()
    h = make(
        tmp_path,
        [text("a" * 8000), text("b")],
        ("halver", halver),
        ("compact", ketch_compact),
        context_window=8_000,
    )
    h.run("first " + "x" * 8000)
    h.run("second")
    assert halver.events == ["before:auto", "after:halver"]


def test_without_the_compact_plugin_its_hooks_are_not_called(tmp_path: Path) -> None:
    """The implementer still loads (``optionalhook``); nothing compacts, and a request
    that cannot fit ends the turn with the kernel's own explanation."""
    halver = Halver()
    h = make(tmp_path, [text("a" * 8000), text("b")], ("halver", halver), context_window=8_000)
    h.run("first " + "x" * 8000)
    h.run("second")
    assert halver.requests == [] and h.kernel.pm.infos["halver"].status == "ok"
    assert h.provider.requests[-1].messages[0].text.startswith("first ")
    end = h.run("third " + "y" * 20_000)
    assert end.stop_reason == "context_overflow" and halver.events == []
    assert any("does not fit the model" in n.message for n in h.of_type("notice"))


def test_budget_fit_context_lets_a_plugin_make_room(tmp_path: Path) -> None:
    """A plugin makes room by replacing the active context (the transcript stays whole);
    one that cannot raises ContextOverflow, and the turn ends with it."""

    class Trimmer:
        def __init__(self) -> None:
            self.calls: list[tuple[int, int | None]] = []

        @hookimpl(optionalhook=True)
        async def budget_fit_context(self, session: Any, budget: Any, overflow: int | None) -> None:
            self.calls.append((budget.capacity, overflow))
            if len(session.active) > 1:
                session.set_active(session.active[-1:], "trimmer")

    trimmer = Trimmer()
    h = Harness.create(
        tmp_path, script=[text("a"), text("b")], plugins=[("trimmer", trimmer)], bundled=["budget"]
    )
    h.run("first")
    h.run("second")
    assert [m.text for m in h.provider.requests[-1].messages] == ["second"]
    assert h.session.transcript[0].text == "first"  # never rewritten
    assert [e.reason for e in h.of_type("active")] == ["trimmer"]
    assert trimmer.calls and all(overflow is None for _, overflow in trimmer.calls)

    class Refuser:
        @hookimpl(optionalhook=True)
        def budget_fit_context(self) -> None:
            raise ContextOverflow("too big: the refuser says so")

    h = Harness.create(
        tmp_path / "refused",
        script=[text("never")],
        plugins=[("refuser", Refuser())],
        bundled=["budget"],
    )
    end = h.run("x")
    assert end.stop_reason == "context_overflow" and not h.provider.requests
    assert any("the refuser says so" in n.message for n in h.of_type("notice"))
