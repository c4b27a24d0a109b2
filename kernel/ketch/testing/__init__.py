"""The plugin author's kit: a scripted provider, a kernel in a temporary workspace,
and helpers to run a turn and look at its events.

Use it from pytest through the fixtures in :mod:`ketch.testing.pytest_plugin`
(``-p ketch.testing.pytest_plugin``, or installed as the ``ketch`` pytest11 plugin), or
directly::

    harness = Harness.create(tmp_path, script=[call("read_file", {"path": "a.txt"}), text("done")])
    end = harness.run("read a.txt")
    assert end.stop_reason == "end_turn"
"""

from __future__ import annotations

from ketch.testing.harness import Harness, approve_all, deny_all, isolated_env
from ketch.testing.scripted import ScriptedProvider, call, calls, error, scripted_kind, text
from ketch.testing.vocabulary import TestVocabulary

__all__ = [
    "Harness",
    "ScriptedProvider",
    "TestVocabulary",
    "approve_all",
    "call",
    "calls",
    "deny_all",
    "error",
    "isolated_env",
    "scripted_kind",
    "text",
]
