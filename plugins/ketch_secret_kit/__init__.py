"""The secret kit: one answer to "is this a secret?", by name and by content.

This package is a library, not a plugin: it registers nothing and has no entry point.
Everything that decides whether content may reach the model asks it -- the hard guards
and the policy (reads, and shell commands that read), the sandbox's masks, the read and
search tools, ``@`` attachments, context files -- and redaction finds secrets in text
with the same rules. So a file is a secret to all of them or to none.

* :mod:`ketch_secret_kit.names` -- secrets by name: ``.env`` and its copies (``.env~``,
  ``#.env#``, ``env.bak``), keys, credential files of tools (``.netrc``, ``.pgpass``,
  ``.my.cnf``, ``.s3cfg``, ``auth.json``, ``kubeconfig``, ``terraform.tfstate``,
  ``client_secret_*.json``...), directories like ``~/.ssh``.
* :mod:`ketch_secret_kit.content` -- secrets in text: credential formats
  (:mod:`ketch_secret_kit.formats`, gitleaks-derived), userinfo in URLs, and values in
  assignment context (detect-secrets' keyword rule and filters).
* :mod:`ketch_secret_kit.files` -- a file's classification (name or content), cached
  by (device, inode, size, mtime).
"""

from __future__ import annotations

from ketch_secret_kit.files import content_secret, is_secret, secret_reason
from ketch_secret_kit.names import SECRET_DIRS, looks_secret, secret_name

__all__ = [
    "SECRET_DIRS",
    "content_secret",
    "is_secret",
    "looks_secret",
    "secret_name",
    "secret_reason",
]
