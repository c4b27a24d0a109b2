"""ketch_frontend_kit: what frontends share (a library: it registers nothing).

``credentials``: the contract between a frontend with an API key to keep (the shell's
first-run setup) and a secret store (the keyring plugin). ``offers``: a slash command
declares that a frontend may run it at start (``START_OFFER`` in its ``extra``), so no
frontend looks a command up by its name. ``setup``: how a provider plugin's kinds read
in a first-run setup (``frontend_setup_choices``), so no setup knows a provider by name. Import-light: frontends' entry modules
declare its specs, and a command's registration names ``START_OFFER`` from here.
"""

# The ``Command.extra`` key of a start offer: the arguments a frontend runs the slash
# command with when it starts (``ketch_frontend_kit.offers``).
START_OFFER = "start_offer"
