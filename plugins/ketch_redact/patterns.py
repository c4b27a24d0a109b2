"""Well-known credential formats, as regular expressions.

A small table, kept here rather than pulled from a scanner package: the scanners worth
their salt (gitleaks, MIT; detect-secrets, Apache-2.0) ship hundreds of rules tuned
for files, with entropy checks and verification, at an import and run-time cost tool
output does not need. These are their rules for the credentials an agent's output
actually carries -- model-provider keys, cloud and forge tokens, private keys, bearer
tokens -- simplified to match the documented formats, with a floor on length so code
that merely mentions a prefix (``sk-``, ``ghp_``) is left alone.

Each entry: a name (shown in the redaction marker) and a pattern; when the pattern
has a group named ``secret``, only that group is redacted (the label before it stays
readable: ``aws_secret_access_key = [REDACTED aws-secret-key]``).

Sources: gitleaks ``config/gitleaks.toml`` (rules ``openai-api-key``,
``anthropic-api-key``, ``gcp-api-key``, ``aws-access-token``, ``github-pat``,
``github-fine-grained-pat``, ``github-oauth``, ``github-app-token``, ``slack-*``,
``stripe-access-token``, ``gitlab-pat``, ``npm-access-token``, ``pypi-upload-token``,
``huggingface-access-token``, ``private-key``, ``jwt``); the providers' own docs for
the key prefixes.
"""

from __future__ import annotations

import re

_B = r"(?<![A-Za-z0-9_\-])"  # no word character just before: not the tail of a longer token
_E = r"(?![A-Za-z0-9_\-])"

PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("anthropic-key", _B + r"sk-ant-[a-z0-9]{2,12}-[A-Za-z0-9_\-]{32,}" + _E),
    ("openai-key", _B + r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}" + _E),
    ("google-api-key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E),
    ("aws-access-key", r"(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"),
    (
        "aws-secret-key",
        r"(?i:aws_?secret_?access_?key|aws_?secret)[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
    ),
    ("github-token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}" + _E),
    ("github-token", _B + r"github_pat_[A-Za-z0-9_]{22,}" + _E),
    ("gitlab-token", _B + r"glpat-[A-Za-z0-9_\-]{20,}" + _E),
    ("slack-token", _B + r"xox[abposr]-[A-Za-z0-9\-]{10,}" + _E),
    ("slack-webhook", r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"),
    ("stripe-key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}" + _E),
    ("npm-token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
    ("pypi-token", _B + r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{50,}" + _E),
    ("huggingface-token", _B + r"hf_[A-Za-z0-9]{34,}" + _E),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _E),
    ("bearer-token", r"(?i:\bbearer)\s+(?P<secret>[A-Za-z0-9._~+/\-]{20,}=*)"),
)

COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern)) for name, pattern in PATTERNS
)
