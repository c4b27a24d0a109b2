"""httpx, without its command-line client (click, rich, pygments)."""

from __future__ import annotations

from ketch_import_kit.standins import stand_in


def _no_cli(*_args: object, **_kwargs: object) -> None:
    raise SystemExit("httpx's command line is not loaded inside ketch: run the `httpx` command")


stand_in("httpx._main", main=_no_cli)

import httpx  # noqa: E402 - after the stand-in, which is the point

__all__ = ["httpx"]
