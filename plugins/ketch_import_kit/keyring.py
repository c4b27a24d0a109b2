"""keyring, without importing the macOS backend's Security framework bindings off macOS."""

from __future__ import annotations

import sys

from ketch_import_kit.standins import stand_in

if sys.platform != "darwin":
    # keyring.backends.macOS does ``try: from . import api except Exception: pass`` and
    # its priority refuses any platform but Darwin first: with ``api`` a stand-in, the
    # backend is exactly as unavailable as before, without find_library's ldconfig run.
    stand_in("keyring.backends.macOS.api")

import keyring  # noqa: E402

__all__ = ["keyring"]
