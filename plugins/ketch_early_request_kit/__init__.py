"""The first request of ``ketch -p`` sent at launch, before ketch loads (a library).

Registers nothing. :mod:`~ketch_early_request_kit.launch` is the ``ketch`` console
script; :mod:`~ketch_early_request_kit.handoff` is where every HTTP provider's
streaming request meets the early one (:func:`answer_for`), and where the
``early_request`` plugin arms the record (:func:`arm`) or drops it (:func:`forget`);
:mod:`~ketch_early_request_kit.record` is the record and its key. See
docs/performance.md ("The first request at launch").
"""

from __future__ import annotations

from ketch_early_request_kit.handoff import answer_for, arm, forget, launched_here

__all__ = ["answer_for", "arm", "forget", "launched_here"]
