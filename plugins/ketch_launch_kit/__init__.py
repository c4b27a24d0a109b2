"""The launch kit: running ketch again, elsewhere, for a command line already parsed.
A library: it registers nothing.

Two plugins start a session somewhere other than where ``ketch`` was typed: the
``worktrees`` plugin (``ketch -w NAME`` runs the session in a worktree) and the
``background`` plugin (``ketch -p … --background`` runs it in a supervised process).
Both hand over the *parsed* options (an ``argparse.Namespace``), never a command line
rebuilt from ``sys.argv``:

    from ketch_launch_kit import run_frontend
    return run_frontend(args, worktree_folder, environ=kernel.environ)

:func:`run_frontend` boots a fresh kernel in that folder — its config layers, trust,
commands, sandbox root and checkpoints are that folder's, exactly as if ``ketch`` had
been typed there — and runs the frontend the options choose. :mod:`.spec` turns a
namespace into JSON and back, for a process started anew.
"""

from __future__ import annotations

from ketch_launch_kit.boot import choose_frontend, run_frontend
from ketch_launch_kit.spec import SpecError, from_spec, to_spec

__all__ = ["SpecError", "choose_frontend", "from_spec", "run_frontend", "to_spec"]
