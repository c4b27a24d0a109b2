"""The sandbox contract (``ketch_tool_kit.sandbox``): a library's hook, declared by the
tools that call it and the sandboxes that implement it, so neither names the other."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ketch import hookimpl
from ketch.testing import Harness
from ketch_tool_kit import sandbox
from ketch_tool_kit.sandbox import wrapper


class Jail:
    """A third-party sandbox: it declares the contract it implements."""

    @hookimpl
    def ketch_add_hookspecs(self, pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(sandbox)

    @hookimpl
    def sandbox_command(
        self, argv: list[str], workspace: Path, network: bool, exposed: Any, reporters: Any
    ) -> list[str]:
        shown = [
            p
            for p in (workspace / ".env", workspace / "key.pem")
            if exposed is not None and exposed(p)
        ]
        if reporters is not None:
            reporters.append(lambda ended: "met a mask" if ended else None)
        return [
            "jail",
            "--net" if network else "--no-net",
            *(f"--show={p.name}" for p in shown),
            "--",
            *argv,
        ]


class Old:
    """An implementation that takes a subset of the arguments still works."""

    @hookimpl
    def sandbox_command(self, argv: list[str], workspace: Path, network: bool) -> None:
        return None


def test_a_sandbox_wraps_through_the_narrow_callable(tmp_path: Path) -> None:
    h = Harness.create(tmp_path, plugins=[("jail", Jail()), ("old", Old())], bundled=["guards"])
    wrap = wrapper(h.kernel)
    assert wrap(["ls"], tmp_path, False) == ["jail", "--no-net", "--", "ls"]
    reporters: list[Any] = []
    wrapped = wrap(["ls"], tmp_path, True, lambda p: p.name == ".env", reporters)
    assert wrapped == ["jail", "--net", "--show=.env", "--", "ls"]
    assert [r(False) for r in reporters] == [None] and [r(True) for r in reporters] == [
        "met a mask"
    ]


def test_without_a_declaring_plugin_nothing_wraps_and_implementations_fail(
    tmp_path: Path,
) -> None:
    """Nobody declares the contract: the callable wraps nothing, and a plugin that
    implements it without ``optionalhook`` is failed (an unknown hook)."""
    h = Harness.create(tmp_path, plugins=[("old", Old())], bundled=["guards"])
    assert wrapper(h.kernel)(["ls"], tmp_path, False) is None
    assert h.kernel.pm.infos["old"].status == "failed"


class Raising:
    @hookimpl
    def ketch_add_hookspecs(self, pluginmanager: Any) -> None:
        pluginmanager.add_hookspecs(sandbox)

    @hookimpl
    def sandbox_command(self, argv: list[str]) -> list[str]:
        raise RuntimeError("bwrap exploded")


def test_a_raising_sandbox_refuses_the_command(tmp_path: Path) -> None:
    import pytest

    from ketch.errors import KetchError

    h = Harness.create(tmp_path, plugins=[("raising", Raising())], bundled=["guards"])
    with pytest.raises(KetchError, match="the command was not run"):
        wrapper(h.kernel)(["ls"], tmp_path, False)
