"""The policy kit: what the hard guards and the policy plugin share that is not bash.

This package is a library, not a plugin: it registers nothing and has no entry point,
so the essential ``guards`` plugin and the optional ``policy`` plugin (and tools that
want the same answers, like the file tools and context) can all import it without
importing each other.

* :mod:`ketch_policy_kit.paths` -- path facts: ``resolve``, ``is_within`` (by component),
  and why a write must always ask (``write_guard``); secrets by name and content are
  :mod:`ketch_secret_kit`'s (re-exported here by name for older callers).
* :mod:`ketch_policy_kit.rules` -- the rule syntax (``shell(git diff:*)``, ``read(GLOB)``,
  ``web(HOST)``...): parsing and matching, in linear time, with a size cap per rule.
* :mod:`ketch_policy_kit.scopes` -- the narrow scopes an "always allow" answer grants.
* :mod:`ketch_policy_kit.commands` -- whether a call runs one of ketch's own commands
  (``ketch trust``, ``ketch attach``), which only the person may run.

The shell analysis (what a command line reads, writes and runs) is in
:mod:`ketch_shell_kit`; this kit knows nothing about bash.
"""
