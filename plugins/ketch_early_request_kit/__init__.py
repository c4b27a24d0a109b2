"""The first request of ``ketch -p`` sent at launch, before ketch loads (a library).

Registers nothing, and imports nothing here: the ``ketch`` console script
(:mod:`~ketch_early_request_kit.launch`) is this package's, and ``ketch --version``
must not pay for the rest. :mod:`~ketch_early_request_kit.handoff` is where every HTTP
provider's streaming request meets the early one (``answer_for``), and where the
``early_request`` plugin arms the record (``arm``) or drops it (``forget``);
:mod:`~ketch_early_request_kit.record` is the record and its key. See
docs/early-request.md.
"""
