"""Which environment variables hold secrets: one answer for every part of ketch.

Standard library only, so that the ``ketch`` console script's launch can ask before
anything else loads. :mod:`ketch_process_kit.childenv` drops :func:`secret_name`'s
variables from every child's environment; redaction (``ketch_secret_kit.names``) and
the early request's record (``ketch_early_request_kit.record``) treat
:func:`secret_variable`'s values as secrets.
"""

from __future__ import annotations

SECRET_MARKERS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL")
# The spellings children still get but that name secrets all the same.
_VARIABLE_MARKERS = ("PASS", "AUTH", "DSN", "COOKIE", "PRIVATE", "CREDENTIAL")


def secret_name(name: str) -> bool:
    """Whether an environment variable's name looks like it holds a credential."""
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def secret_variable(name: str, value: str = "") -> bool:
    """Whether an environment variable's value is a secret to keep out of output:
    ``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*`` (as the kernel strips them from
    children), and ``MYSQL_PWD``, ``*PASS*``, ``*AUTH*``, ``*DSN*``... (a path value
    of those, like ``XAUTHORITY``, is not)."""
    if secret_name(name):
        return True
    upper = name.upper()
    if upper.endswith("_PWD") or any(marker in upper for marker in _VARIABLE_MARKERS):
        return not value.startswith(("/", "~/"))
    return False
