"""ketch_frontend_kit: what frontends share (a library: it registers nothing).

``credentials``: the contract between a frontend with an API key to keep (the shell's
first-run setup) and a secret store (the keyring plugin). ``offers``: a slash command
declares that a frontend may run it at start (``START_OFFER`` in its ``extra``), so no
frontend looks a command up by its name. ``setup``: how a provider plugin's kinds read
in a first-run setup (``frontend_setup_choices``), so no setup knows a provider by name.
Import-light: frontends' entry modules declare its specs, and a command's registration
names ``START_OFFER`` from here.

``signals``: SIGINT, SIGTERM and SIGHUP cancel the running turn, and the frontend exits
with 128 + the signal.

``sessions``: the session the command line asks for (``--resume ID``, ``--continue``, or
a new one).
"""

# The ``Command.extra`` key of a start offer: the arguments a frontend runs the slash
# command with when it starts (``ketch_frontend_kit.offers``).
START_OFFER = "start_offer"

# The frontend that runs the session in the worktree ``-w NAME`` names (the worktrees
# plugin registers it); a run started elsewhere (a background worker) chooses it so that
# it makes its worktree itself.
WORKTREE_FRONTEND = "worktree"
# Where ``-w`` keeps the frontend chosen before it (the session in the worktree runs it).
WORKTREE_PREVIOUS = "worktree_frontend"
# Set on the parsed options by an option whose frontend makes the ``-w`` worktree itself
# (``--background``): ``-w`` then leaves the frontend as it is.
MAKES_WORKTREE = "frontend_makes_worktree"
