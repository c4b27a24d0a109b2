"""Two kernels in one process share nothing (issue 25 item 5).

``ketch acp`` serves several editor sessions from one process, one kernel each, with
different workspaces and settings. What one kernel decides, approves, probes or reports
must never show in another: a plugin keeps such state in ``kernel.stash`` /
``session.stash``, never in a module global (``tests/meta/test_meta_state.py``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Literal

import pytest

import ketch_sandbox
from ketch.api import ApprovalAnswer, ApprovalRequest
from ketch.testing import Harness, call, text
from ketch_sandbox.bwrap import probe
from ketch_tool_kit.sandbox import SANDBOXED, wrapper

BUNDLED = ["policy", "shell", "sandbox", "fs"]


class Approver:
    """Says yes (for this call, or "for this session") and records what it was asked."""

    def __init__(self, remember: Literal["once", "session"] = "once") -> None:
        self.asked: list[ApprovalRequest] = []
        self.remember = remember

    async def __call__(self, request: ApprovalRequest) -> ApprovalAnswer:
        self.asked.append(request)
        return ApprovalAnswer(approved=True, remember=self.remember, origin="person")


def sandboxed(h: Harness) -> bool:
    return h.session.snapshot().facts.get(SANDBOXED) is True


def sandbox_notices(h: Harness) -> list[str]:
    return [e.message for e in h.of_type("notice") if e.message.startswith("sandbox:")]


def echo_twice() -> list[dict[str, Any]]:
    return [
        call("shell", {"command": "echo one"}),
        call("shell", {"command": "echo two"}),
        text("done"),
    ]


def test_sandbox_settings_probe_and_notices_stay_in_their_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One kernel with the sandbox off, one with no bwrap on its PATH, one as usual: each
    is told its own reason once, and each wraps (or not) by its own settings and probe."""
    off = Harness.create(tmp_path / "off", bundled=BUNDLED, config="[sandbox]\nenabled = false\n")
    also_off = Harness.create(
        tmp_path / "also-off", bundled=BUNDLED, config="[sandbox]\nenabled = false\n"
    )
    empty = tmp_path / "empty-path"
    empty.mkdir()
    with monkeypatch.context() as patch:  # this kernel probes a PATH without bwrap
        patch.setenv("PATH", str(empty))
        missing = Harness.create(tmp_path / "missing", bundled=BUNDLED, env={"PATH": str(empty)})
        _ = missing.session
    usual = Harness.create(tmp_path / "usual", bundled=BUNDLED)
    works = probe().available
    _ = off.session, also_off.session, usual.session

    # Each kernel that turned it off is told so, once: another having been told first
    # does not silence it.
    for h in (off, also_off):
        assert sandbox_notices(h) == [
            "sandbox: off ([sandbox] enabled = false); shell commands run unsandboxed"
        ]
        assert not sandboxed(h) and not ketch_sandbox.active(h.kernel)
        assert wrapper(h.kernel)(["ls"], h.workspace, False) is None
    # A kernel whose probe found no bwrap says that, and only it.
    [said] = sandbox_notices(missing)
    assert "bubblewrap (bwrap) is not installed" in said and not sandboxed(missing)
    assert wrapper(missing.kernel)(["ls"], missing.workspace, False) is None
    # The usual kernel saw none of it: its own probe, its own setting, no notice.
    assert sandbox_notices(usual) == ([] if works else sandbox_notices(usual))
    assert sandboxed(usual) == works and ketch_sandbox.active(usual.kernel) == works
    wrapped = wrapper(usual.kernel)(["ls"], usual.workspace, False)
    assert (wrapped is not None) == works
    if works:
        assert wrapped is not None and str(usual.workspace.resolve()) in " ".join(wrapped)
        assert str(off.workspace.resolve()) not in " ".join(wrapped)
    # A session started later in a kernel that said its notice is not told again; a new
    # kernel is (its own state, not the process's).
    off.kernel.new_session(provider=off.provider)
    assert len(sandbox_notices(off)) == 1


def test_approvals_and_rules_stay_in_their_kernel(tmp_path: Path) -> None:
    """A "yes, for this session" in one kernel allows nothing in another; an allow rule of
    one kernel's config decides nothing in another; both turns run side by side."""
    approving = Harness.create(tmp_path / "a", bundled=BUNDLED, script=echo_twice())
    asking = Harness.create(tmp_path / "b", bundled=BUNDLED, script=echo_twice())
    ruled = Harness.create(
        tmp_path / "c",
        bundled=BUNDLED,
        script=echo_twice(),
        config='[permissions]\nallow = ["shell(echo:*)"]\n',
    )
    first, second, third = Approver("session"), Approver(), Approver()

    async def both() -> None:
        await approving.turn("echo twice", approver=first)
        await asyncio.gather(
            asking.turn("echo twice", approver=second), ruled.turn("echo twice", approver=third)
        )

    asyncio.run(both())
    # The approving kernel asked once and remembered the scope for its session.
    assert [r.scope for r in first.asked] == ["shell(echo:*)"]
    assert "shell(echo:*)" in approving.session.snapshot().approvals
    # The other kernels never saw it: one asks for each call, the other's rule allows both.
    assert [r.scope for r in second.asked] == ["shell(echo:*)", "shell(echo:*)"]
    assert "shell(echo:*)" not in asking.session.snapshot().approvals
    assert third.asked == [] and "shell(echo:*)" not in ruled.session.snapshot().approvals
    assert "shell(echo:*)" not in asking.session.snapshot().rules.get("allow", ())
    for h in (approving, asking, ruled):
        outputs = [e.output.splitlines()[0] for e in h.of_type("tool_result")]
        assert outputs == ["one", "two"]


def test_tool_setting_notices_are_given_in_each_kernel(tmp_path: Path) -> None:
    """A bad ``[tools.*]`` value is reported once per session, in every kernel that has
    it: one kernel's report does not silence another's."""
    config = '[tools.read_file]\nmax_lines = "many"\n'
    script = [
        call("read_file", {"path": "a.txt"}),
        call("read_file", {"path": "a.txt"}),
        text("ok"),
    ]
    kernels = [
        Harness.create(tmp_path / name, bundled=BUNDLED, config=config, script=list(script))
        for name in ("one", "two")
    ]
    for h in kernels:
        (h.workspace / "a.txt").write_text("hello\n")
        h.run("read it twice", approver=Approver())
        bad = [e.message for e in h.of_type("notice") if "[tools.read_file]" in e.message]
        assert len(bad) == 1 and "max_lines" in bad[0]
