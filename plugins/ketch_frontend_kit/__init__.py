"""ketch_frontend_kit: what frontends share (a library: it registers nothing).

``credentials``: the contract between a frontend with an API key to keep (the shell's
first-run setup) and a secret store (the keyring plugin). ``offers``: a slash command
declares that a frontend may run it at start (``START_OFFER``), so no frontend looks a
command up by its name. Import-light: frontends'
entry modules declare its specs.
"""
