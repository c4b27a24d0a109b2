"""ketch_frontend_kit: what frontends share (a library: it registers nothing).

``credentials``: the contract between a frontend with an API key to keep (the shell's
first-run setup) and a secret store (the keyring plugin). Import-light: frontends'
entry modules declare its specs.

``signals``: SIGINT, SIGTERM and SIGHUP cancel the running turn, and the frontend exits
with 128 + the signal.
"""
