"""The sandbox's workspace scan (its prewarm) starts once the model first answers, not at
session start: before that it would only compete with the first request's path for the
interpreter, and no command can come before the model's answer anyway."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from runner import needs_sandbox

from ketch.testing import text


@needs_sandbox
def test_the_workspace_scan_starts_after_the_first_request(
    ketch_harness: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import ketch_sandbox

    harness = ketch_harness(script=[text("done")], bundled=["sandbox", "policy"])
    started: list[int] = []  # the requests the model had received when the scan began
    real = ketch_sandbox._prewarm

    def spy(workspace: Any, settings: Any) -> None:
        started.append(len(harness.provider.requests))
        real(workspace, settings)

    monkeypatch.setattr(ketch_sandbox, "_prewarm", spy)
    session = harness.session
    assert session.stash.get(ketch_sandbox.SANDBOXED), "the sandbox does not work here"
    time.sleep(0.3)
    assert started == [], "the scan began at session start, before any request"
    harness.run("hi")
    deadline = time.monotonic() + 10
    while not started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started == [1], "the scan did not begin once the model answered"
