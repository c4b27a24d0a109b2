"""One classification of secrets, by name and by content (issue 23, item 5).

The same answer reaches the guards and the policy (a read, a command that reads), the
grep tool, context files, the sandbox's masks and redaction; these tests pin the
classification itself, and the places that use it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ketch_secret_kit import content_secret, is_secret, secret_name, secret_reason
from ketch_secret_kit.content import findings, first_finding
from ketch_secret_kit.files import cache_clear, without_url_credentials
from ketch_secret_kit.names import secret_variable

SECRET_NAMES = [
    ".env", ".env~", "#.env#", ".#.env", ".env-local", ".env_prod", ".env.local", ".env.bak", "env.bak", "env.old",
    ".env.swp", "prod.env", "terraform.tfstate", "terraform.tfstate.backup", "kubeconfig", "dev.kubeconfig",
    "client_secret_1234.apps.googleusercontent.com.json", ".my.cnf", ".mylogin.cnf", ".s3cfg", "auth.json",
    ".netrc", "_netrc", ".pgpass", ".git-credentials", "id_rsa", "id_ed25519", "id_ecdsa_sk", "server.pem", "tls.key",
    "cert.p12", "credentials", "credentials.json", "aws.credentials", "secrets.yaml", "app.secret", ".htpasswd",
    ".vault-token", ".bash_history", "service-account-prod.json", "prod.tfvars", "id_rsa.bak", "credentials~",
]  # fmt: skip
NOT_SECRET_NAMES = [
    ".env.example", ".env.sample", ".env.template", "id_rsa.pub", "env", "README.md", "settings.py", "config.yaml",
    "id_map.py", "keyboard.c", "tokenizer.py", "package.json", "environment.yml", "envelope.txt", "secretary.txt",
]  # fmt: skip


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert secret_name(name), name


@pytest.mark.parametrize("name", NOT_SECRET_NAMES)
def test_ordinary_names(name: str) -> None:
    assert not secret_name(name), name


GITHUB = "ghp_" + "a8Kd93hdK2lQ0zpXvB7nM1cR4tY6uW9eS2fH"
SECRET_TEXTS = {
    "remote url": f'[remote "origin"]\n\turl = https://user:{GITHUB}@github.com/o/r.git\n',
    "token as user": "url = https://" + GITHUB + "@github.com/o/r.git\n",
    "database url": "DATABASE_URL=postgres://app:Hx7pq2Lm9Zr4@db.internal:5432/app\n",
    "yaml password": "database:\n  password: s3cr3t-Pr0d-pa55w0rd\n",
    "json key": '{"region": "eu", "api_key": "Zq8kd93Lm2xPq4Rt7Yw1"}',
    "ini secret": "[auth]\nclient_secret = 9fK2mQ7xL4pR8vT1\n",
    "xml": "<password>Zq8!kd93Lm2</password>",
    "aws": "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzQ8kd93Lm2",
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW" * 2 + "\n-----END OPENSSH PRIVATE KEY-----\n",
    "env style": "export MYSQL_PWD=Tq9vX2mL7kP4\n",
}  # fmt: skip
NOT_SECRET_TEXTS = {
    "placeholders": "password: changeme\ntoken: ${TOKEN}\napi_key: <your-api-key>\nsecret: xxxxxxxxxx\n",
    "references": 'password = os.environ["DB_PASSWORD"]\ntoken: {{ vault.token }}\nsecret_file: /run/secrets/db\n',
    "ssh urls": "git@github.com:o/r.git\nssh://git@host/x\nhttps://github.com/o/r.git\n",
    "counts": "max_tokens: 4096\ntoken_count = 12345678\npassword_min_length: 12\n",
    "hash": 'sha256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"\n',
    "prose": "Set your password in the settings page. The API key is created by the admin.\n",
    "key template": "-----BEGIN RSA PRIVATE KEY-----\n{key}\n-----END RSA PRIVATE KEY-----\n",
}


@pytest.mark.parametrize("label", SECRET_TEXTS)
def test_secret_content(label: str) -> None:
    assert first_finding(SECRET_TEXTS[label]) is not None, label


@pytest.mark.parametrize("label", NOT_SECRET_TEXTS)
def test_ordinary_content(label: str) -> None:
    assert first_finding(NOT_SECRET_TEXTS[label]) is None, label


def test_source_code_counts_formats_not_keyword_assignments() -> None:
    code = 'password = "Zq8kd93Lm2xPq"\nJWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"\n'
    assert first_finding(code, code=True) is None
    assert first_finding(code) is not None
    assert first_finding(f'TOKEN = "{GITHUB}"\n', code=True) is not None


def test_files_by_name_and_content_with_a_cache_by_identity(tmp_path: Path) -> None:
    cache_clear()
    plain = tmp_path / "notes.yaml"
    plain.write_text("title: x\n")
    assert secret_reason(plain) is None
    plain.write_text("password: Zq8kd93Lm2xPq4\n")  # same inode, new size and mtime
    assert secret_reason(plain) == "it holds a credential (secret-assignment)"
    assert is_secret(tmp_path / ".env.local")  # by name, even before it exists
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00password: Zq8kd93Lm2xPq4")
    assert content_secret(binary) is None
    link = tmp_path / "link"
    link.symlink_to(plain)
    assert content_secret(link) is None  # symlinks are resolved by the caller
    outside = tmp_path / "outside"
    outside.mkdir()
    far = outside / "x.txt"
    far.write_text("password: Zq8kd93Lm2xPq4\n")
    assert secret_reason(far, within=tmp_path / "ws") is None  # not opened outside the workspace
    assert secret_reason(far, within=tmp_path) is not None


def test_a_git_config_without_its_credentials(tmp_path: Path) -> None:
    config = tmp_path / "config"
    config.write_text(
        f'[remote "a"]\n\turl = https://me:{GITHUB}@github.com/o/r.git\n[remote "b"]\n\turl = https://{GITHUB}@h/x\n'
    )
    cleaned = (without_url_credentials(config) or b"").decode()
    assert GITHUB not in cleaned
    assert "url = https://me@github.com/o/r.git" in cleaned and "url = https://h/x" in cleaned


def test_secret_variables_beyond_the_kernels_markers() -> None:
    for name in (
        "MYSQL_PWD",
        "PGPASSWORD",
        "HTTP_PROXY_PASS",
        "SENTRY_DSN",
        "GITHUB_TOKEN",
        "BASIC_AUTH",
    ):
        assert secret_variable(name, "v4lue"), name
    for name in ("PWD", "OLDPWD", "PATH", "HOME"):
        assert not secret_variable(name, "/x"), name
    assert not secret_variable("XAUTHORITY", "/home/u/.Xauthority")


def test_findings_give_spans_for_redaction() -> None:
    text = f"origin\thttps://x-access-token:{GITHUB}@github.com/o/r.git (fetch)"
    spans = {(f.name, text[f.start : f.end]) for f in findings(text)}
    assert ("url-password", GITHUB) in spans


def test_every_content_format_compiles() -> None:
    """The formats compile on first use (not at import): each one must compile."""
    from ketch_secret_kit.formats import PATTERNS

    assert all(p.regex.pattern == p.source for p in PATTERNS)
