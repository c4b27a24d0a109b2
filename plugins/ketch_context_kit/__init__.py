"""ketch_context_kit: what the plugins that shape the conversation share (a library: it
registers nothing).

* ``turns``: a turn is the prompt the person typed and everything up to the next one
  (:func:`~ketch_context_kit.turns.split_turns`, :func:`~ketch_context_kit.turns.prompt_numbers`);
* ``compaction``: what a compaction is (request, result, its event) and the one place a
  session keeps its compaction records and pinned turns (``session.state``), read by the
  compact plugin, ``/context``, rewinding and the store's transcript view;
* ``marks``: the transcript messages a rewind abandoned (kept, marked);
* ``meter``: the utilization meter's colour bands.

Import-light: no pydantic at import time except in ``compaction``.
"""
