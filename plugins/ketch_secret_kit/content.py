"""Secrets by content: where in a text a credential stands.

Three kinds of evidence, each cheap to rule out (a literal trigger must be present
before any regular expression runs):

* **credential formats** (:mod:`ketch_secret_kit.formats`): provider and cloud keys,
  forge tokens, private key blocks, JWTs, bearer tokens;
* **userinfo in URLs**: ``https://user:TOKEN@host`` (a remote in ``.git/config``, a
  ``DATABASE_URL``, a proxy setting) -- the password, or a token-like user name
  (``https://ghp_...@github.com``);
* **a secret-looking value in assignment context** (detect-secrets' ``KeywordDetector``,
  with its filters for placeholders and references): ``password = "..."``,
  ``API_KEY=...``, ``"client_secret": "..."``, ``<password>...</password>``, where the key
  names a password, secret, token, API key, private key or credential and the value is
  a literal that looks like one (not ``${VAR}``, ``os.environ[...]``, ``changeme``,
  ``<your-token>``, ``xxxxxxxx``, a path).

:func:`findings` returns the spans (for redaction); :func:`first_finding` the first one
(for classifying a file). Sources: detect-secrets (Apache-2.0, Yelp) ``keyword.py`` and
``filters/heuristic.py`` for the keyword rule and its filters; gitleaks (MIT) for the
formats.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

from ketch_secret_kit.formats import PATTERNS


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    name: str  # what kind of secret: "github-token", "url-password", "password-assignment"...


# --- helpers ---------------------------------------------------------------------------------


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    if not value:
        return 0.0
    counts = Counter(value)
    total = len(value)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


_PLACEHOLDER_PARTS = (
    "example", "dummy", "placeholder", "changeme", "change_me", "change-me", "redacted", "your_", "your-",
    "yourpass", "xxxx", "****", "....", "<", ">", "${", "{{", "}}", "%(", "%s", "$(", "todo", "fixme", "notasecret",
    "not-a-secret", "fake", "sample", "lorem",
)  # fmt: skip
_PLACEHOLDER_WORDS = frozenset(
    {"password", "passwd", "secret", "token", "none", "null", "nil", "undefined", "true", "false", "test", "testing",
     "default", "empty", "required", "optional", "string", "value", "hidden", "masked", "unset", "pass", "admin"}
)  # fmt: skip


def placeholder(value: str) -> bool:
    """A value that stands for a secret rather than being one."""
    lowered = value.lower().strip("\"'`")
    if lowered in _PLACEHOLDER_WORDS or len(set(lowered)) <= 2:
        return True
    if any(part in lowered for part in _PLACEHOLDER_PARTS):
        return True
    return _sequential(lowered)


def _sequential(value: str) -> bool:
    """abcdefgh, 12345678, ABCDEF0123 (detect-secrets' ``is_sequential_string``)."""
    run = 1
    for before, after in zip(value, value[1:], strict=False):
        run = run + 1 if ord(after) - ord(before) == 1 else 1
        if run >= 6:
            return True
    return False


# --- credential formats ---------------------------------------------------------------------


def _formats(text: str, lowered: str | None) -> tuple[list[Finding], str | None]:
    found: list[Finding] = []
    for pattern in PATTERNS:
        if pattern.lowered:
            lowered = text.lower() if lowered is None else lowered
            if not any(t in lowered for t in pattern.triggers):
                continue
        elif not any(t in text for t in pattern.triggers):
            continue
        grouped = "secret" in pattern.regex.groupindex
        for match in pattern.regex.finditer(text):
            if grouped and match.group("secret") is not None:
                found.append(Finding(match.start("secret"), match.end("secret"), pattern.name))
            else:
                found.append(Finding(match.start(), match.end(), pattern.name))
    return found, lowered


# --- userinfo in URLs ------------------------------------------------------------------------

_URL = re.compile(
    r"(?<![A-Za-z0-9+.\-])[A-Za-z][A-Za-z0-9+.\-]{0,30}://"
    r"(?P<user>[^\s/?#@:\"'<>`\\]*)(?::(?P<password>[^\s/?#@\"'<>`\\]*))?@"
    r"(?=[\[A-Za-z0-9])"
)


def _token_like(value: str) -> bool:
    """A user name that is really a token (``https://ghp_xxx@github.com``)."""
    return len(value) >= 16 and entropy(value) >= 3.0 and any(c.isdigit() for c in value)


def _urls(text: str) -> list[Finding]:
    if "://" not in text or "@" not in text:
        return []
    found: list[Finding] = []
    for match in _URL.finditer(text):
        password = match.group("password")
        if password:
            found.append(Finding(match.start("password"), match.end("password"), "url-password"))
        elif _token_like(match.group("user") or ""):
            found.append(Finding(match.start("user"), match.end("user"), "url-token"))
    return found


# --- a secret in assignment context -----------------------------------------------------------

_KEYWORDS = (
    r"pass|pwd|secret|token|api[_\-.]?key|private[_\-.]?key|access[_\-.]?key|auth|credential"
)
_KEYWORD = re.compile(_KEYWORDS)  # on lowercased text: case-sensitive is 8x faster in re
_KEYWORD_ANY_CASE = re.compile("(?i)" + _KEYWORDS)
_KEY_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-")
_SECRET_WORDS = frozenset(
    {"password", "passwd", "pwd", "pass", "passphrase", "secret", "secrets", "token", "apikey", "credential",
     "credentials", "privatekey", "accesskey", "secretkey", "authtoken", "auth"}
)  # fmt: skip
_PAIRS = frozenset(
    {("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key"), ("client", "secret"), ("auth", "token"),
     ("access", "token"), ("refresh", "token"), ("app", "secret"), ("signing", "key"), ("encryption", "key")}
)  # fmt: skip
# A key naming where a secret is, or something about it, rather than the secret itself.
_NOT_VALUE_KEYS = frozenset(
    {"file", "path", "dir", "name", "env", "var", "type", "url", "uri", "endpoint", "length", "len", "size", "count",
     "id", "ids", "header", "prefix", "field", "policy", "expiry", "expires", "ttl", "format", "method", "mode",
     "command", "cmd", "helper", "source", "store", "kind", "label", "hint", "usage", "min", "max", "enabled"}
)  # fmt: skip
_VALUE = re.compile(r"[^\s\"'`,;<]{8,512}")
_REFERENCE = re.compile(
    r"[$(){}\[\]<>%]|^(?:env|os|process|settings|config|self|this)\.|^/|^\./|^~/"
)


def _words(key: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def _secret_key(key: str) -> bool:
    words = _words(key)
    if not words or words[-1] in _NOT_VALUE_KEYS:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _PAIRS for pair in zip(words, words[1:], strict=False))


def _assignment_value(text: str, end: int) -> tuple[int, int] | None:
    """The value assigned right after a key ending at ``end``: ``= v``, ``: "v"``,
    ``=> 'v'``, ``">v<`` (XML); None when no literal value follows."""
    index = end
    length = len(text)
    if index < length and text[index] in "\"'":
        index += 1  # the key's closing quote ("password": ...)
    while index < length and text[index] in " \t":
        index += 1
    if text.startswith(("=>", ":="), index):
        index += 2
    elif index < length and text[index] in ":=>":  # ">" closes an XML tag: <password>v<
        index += 1
    else:
        return None
    while index < length and text[index] in " \t":
        index += 1
    if index < length and text[index] in "\"'`":
        index += 1
    match = _VALUE.match(text, index)
    if match is None:
        return None
    return match.start(), match.end()


# The rest of a key after a keyword, then an assignment: most keyword hits (prose,
# code that only mentions a token) fail here, in C, before any Python runs for them.
_KEY_TAIL = re.compile(r"[A-Za-z0-9_.\-]*[\"']?[ \t]*(?:=>|:=|[:=>])")


def _assignments(text: str, lowered: str | None) -> list[Finding]:
    found: list[Finding] = []
    last = -1
    lowered = text.lower() if lowered is None else lowered
    # Lowercasing keeps offsets only when every character stays one character.
    hits = (
        _KEYWORD.finditer(lowered)
        if len(lowered) == len(text)
        else _KEYWORD_ANY_CASE.finditer(text)
    )
    for hit in hits:
        if hit.start() < last or _KEY_TAIL.match(text, hit.end()) is None:
            continue
        start, end = hit.start(), hit.end()
        while start > 0 and text[start - 1] in _KEY_CHARS:
            start -= 1
        while end < len(text) and text[end] in _KEY_CHARS:
            end += 1
        last = end
        key = text[start:end]
        if text.endswith("://", 0, start):
            continue  # the user name of a URL's userinfo: the URL rule reads it
        if len(key) > 80 or not _secret_key(key):
            continue
        span = _assignment_value(text, end)
        if span is None:
            continue
        value = text[span[0] : span[1]].rstrip("\"'`")
        if (
            _REFERENCE.search(value)
            or placeholder(value)
            or value.replace("_", "").replace("-", "").isalpha()
            and entropy(value) < 3.0
            or entropy(value) < 2.5
        ):
            continue
        found.append(Finding(span[0], span[0] + len(value), "secret-assignment"))
    return found


# --- together ---------------------------------------------------------------------------------


def findings(text: str, *, assignments: bool = True) -> list[Finding]:
    """Every credential in ``text`` (spans may overlap). ``assignments=False`` leaves
    out the keyword rule (for source code, where it would mostly find test data)."""
    if not text:
        return []
    found, lowered = _formats(text, None)
    found += _urls(text)
    if assignments:
        found += _assignments(text, lowered)
    return found


# Formats that in source code are nearly always test data (a sample JWT, "Bearer x").
_TEST_DATA_IN_CODE = frozenset({"jwt", "bearer-token"})


def first_finding(text: str, *, code: bool = False) -> Finding | None:
    """The first real-looking credential in ``text`` (placeholders and test values of a
    known format -- ``sk-ant-xxxx...`` -- do not count), or None. ``code``: the text is
    source code, where only credential formats and URL userinfo count (not the keyword
    rule, JWTs or bearer tokens: test data, mostly)."""
    for finding in sorted(findings(text, assignments=not code), key=lambda f: f.start):
        if code and finding.name in _TEST_DATA_IN_CODE:
            continue
        value = text[finding.start : finding.end]
        if finding.name == "private-key":
            if _key_body(value):
                return finding
            continue
        if finding.name in ("url-password", "url-token", "secret-assignment"):
            if finding.name == "url-password" and placeholder(value):
                continue
            return finding
        if placeholder(value) or entropy(value) < 3.0:
            continue
        if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
            continue  # generated keys mix both; "Bearer sk-minimal-build-test" does not
        return finding
    return None


def _key_body(block: str) -> bool:
    """A private key block with a real key in it: dozens of base64 characters, not a
    template (``{key}``) or a few characters of test data."""
    lines = block.splitlines()[1:]
    body = "".join(
        line.strip() for line in lines if not line.startswith("-----") and ":" not in line
    )
    return len(body) >= 64 and re.fullmatch(r"[A-Za-z0-9+/=\\n]+", body) is not None
