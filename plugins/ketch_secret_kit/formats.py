"""Well-known credential formats, as regular expressions (used by the classifier and redaction).

A small table, kept here rather than pulled from a scanner package: the scanners worth
their salt (gitleaks, MIT; detect-secrets, Apache-2.0) ship hundreds of rules tuned
for files, with entropy checks and verification, at an import and run-time cost tool
output does not need. These are their rules for the credentials an agent's output
actually carries -- model-provider keys, cloud and forge tokens, private keys, bearer
tokens -- simplified to match the documented formats, with a floor on length so code
that merely mentions a prefix (``sk-``, ``ghp_``) is left alone.

Each entry: a name (shown in the redaction marker), a pattern, and the literal
triggers without which it cannot match (so output with none of them -- nearly all
output -- costs a few substring searches); when the pattern has a group named
``secret``, only that group is redacted (the label before it stays readable:
``aws_secret_access_key = [REDACTED aws-secret-key]``).

Sources: gitleaks ``config/gitleaks.toml`` (rules ``openai-api-key``,
``anthropic-api-key``, ``gcp-api-key``, ``aws-access-token``, ``github-pat``,
``github-fine-grained-pat``, ``github-oauth``, ``github-app-token``, ``slack-*``,
``stripe-access-token``, ``gitlab-pat``, ``npm-access-token``, ``pypi-upload-token``,
``huggingface-access-token``, ``private-key``, ``jwt``, ``sendgrid-api-token``,
``digitalocean-*``, ``shopify-*``, ``age-secret-key``, ``azure-storage-account-key``
-- gitleaks is MIT-licensed, Copyright (c) 2019 Zachary Rice); the providers' own docs
for the key prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

_WORD = r"[A-Za-z0-9_\-]"
_END = r"(?!" + _WORD + ")"


def _starts(prefix: str, rest: str, before: str = _WORD) -> str:
    """``prefix`` first, so the regex engine can search for it as a literal; then the
    check that no ``before`` character precedes it (a lookbehind of fixed width)."""
    return re.escape(prefix) + f"(?<!{before}{re.escape(prefix)})" + rest


@dataclass(frozen=True)
class Pattern:
    name: str
    source: str  # the regular expression, compiled the first time a trigger is seen
    triggers: tuple[str, ...]  # the pattern runs only when one of these is in the text
    lowered: bool = False  # triggers are looked for in the lowercased text

    @cached_property
    def regex(self) -> re.Pattern[str]:
        # Compiled on first use: most starts scan no text, and compiling them all costs
        # more than a start of ketch may spend before its first model request.
        return re.compile(self.source)


def _p(name: str, pattern: str, *triggers: str, lowered: bool = False) -> Pattern:
    return Pattern(name, pattern, triggers, lowered)


PATTERNS: tuple[Pattern, ...] = (
    _p(
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        "PRIVATE KEY",
    ),
    _p(
        "anthropic-key", _starts("sk-ant-", r"[a-z0-9]{2,12}-[A-Za-z0-9_\-]{32,}" + _END), "sk-ant-"
    ),
    _p(
        "openai-key",
        _starts("sk-", r"(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{32,}" + _END),
        "sk-",
    ),
    _p("google-api-key", _starts("AIza", r"[0-9A-Za-z_\-]{35}" + _END), "AIza"),
    _p(
        "aws-access-key",
        _starts("A", r"(?:3T[A-Z0-9]|KIA|SIA|BIA|CCA)[A-Z0-9]{16}(?![A-Z0-9])", before="[A-Z0-9]"),
        "AKIA",
        "ASIA",
        "ABIA",
        "ACCA",
        "A3T",
    ),
    _p(
        "aws-secret-key",
        r"(?i:aws_?secret_?access_?key|aws_?secret)[\"']?\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        "aws",
        lowered=True,
    ),
    _p(
        "github-token",
        _starts("gh", r"[pousr]_[A-Za-z0-9]{36,}" + _END),
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "ghr_",
    ),
    _p("github-token", _starts("github_pat_", r"[A-Za-z0-9_]{22,}" + _END), "github_pat_"),
    _p("gitlab-token", _starts("glpat-", r"[A-Za-z0-9_\-]{20,}" + _END), "glpat-"),
    _p("slack-token", _starts("xox", r"[abposr]-[A-Za-z0-9\-]{10,}" + _END), "xox"),
    _p(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}",
        "hooks.slack.com",
    ),
    _p(
        "stripe-key",
        r"(?<![A-Za-z0-9_\-])[sr]k_(?:live|test)_[A-Za-z0-9]{20,}" + _END,
        "k_live_",
        "k_test_",
    ),
    _p("npm-token", _starts("npm_", r"[A-Za-z0-9]{36}" + _END), "npm_"),
    _p(
        "pypi-token",
        _starts("pypi-AgEIcHlwaS5vcmc", r"[A-Za-z0-9_\-]{50,}" + _END),
        "pypi-AgEIcHlwaS5vcmc",
    ),
    _p("huggingface-token", _starts("hf_", r"[A-Za-z0-9]{34,}" + _END), "hf_"),
    _p(
        "jwt",
        _starts("eyJ", r"[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}" + _END),
        "eyJ",
    ),
    _p("sendgrid-key", _starts("SG.", r"[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _END), "SG."),
    _p("digitalocean-token", _starts("do", r"[opr]_v1_[a-f0-9]{64}" + _END), "_v1_"),
    _p("shopify-token", _starts("shp", r"(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _END), "shp"),
    _p(
        "age-secret-key",
        r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}",
        "AGE-SECRET-KEY-1",
    ),
    _p(
        "azure-storage-key",
        r"(?i:AccountKey)=(?P<secret>[A-Za-z0-9+/]{80,}={0,2})",
        "accountkey",
        lowered=True,
    ),
    _p(
        "bearer-token",
        r"(?i:\bbearer)\s+(?P<secret>[A-Za-z0-9._~+/\-]{20,}=*)",
        "bearer",
        lowered=True,
    ),
)
