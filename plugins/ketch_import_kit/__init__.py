"""ketch_import_kit: third-party libraries imported without the parts ketch never runs (a library).

Start-up is where users feel ketch (docs/performance.md), and two of its libraries spend
part of it on code that cannot run inside ketch:

* ``import httpx`` imports httpx's own command-line client (``httpx._main``: click, rich,
  pygments; 27-41 ms) whenever those are installed, and rich always is. httpx 0.28 does it
  eagerly; the fix (a lazy import) is not released.
* keyring's backend discovery imports every backend, and on any OS the macOS one runs
  ``ctypes.util.find_library`` for Apple's frameworks (``ldconfig``, maybe ``gcc``: ~27 ms
  on Linux) just to be rejected by its own platform check.

Import ``httpx`` and ``keyring`` from here (``from ketch_import_kit.httpx import httpx``,
``from ketch_import_kit.keyring import keyring``), never directly: the first import in the
process decides. Each stand-in is put in ``sys.modules`` only when the real module is not
loaded yet, and behaves as the real one does where ketch can reach it (httpx's ``main``
says to run the ``httpx`` command; the macOS backend stays unavailable off macOS, as it
is anyway). It registers nothing.
"""
