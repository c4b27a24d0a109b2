"""Issue 31's acceptance, through the real CLI: a scripted session with a proven read, an
edit a person approves on the terminal, a shell command a rule allows and one a rule
denies. Its receipt verifies with ``ketch verify`` and, independently, with
securesystemslib and in-toto (the DSSE signature) and in-toto-attestation (the v1
Statement schema); it lists each decision with its origin; and changing one byte of a
subject file, of the predicate, or of the stored journal makes verification fail,
saying which."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ketch.testing.harness import isolated_env
from tests.attest.kit import (
    CONTENT_CANARY,
    GIT,
    PROMPT_CANARY,
    RULES,
    acceptance_script,
    calls_by_tool,
    env_for,
    envelope,
    ketch,
    make_workspace,
    needs_git,
    run_approving,
    statement,
)

pytestmark = [needs_git, pytest.mark.slow]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("attest")
    base = {k: v for k, v in os.environ.items() if not k.startswith("KETCH_")}
    env = env_for(root, acceptance_script(), base={**base, **isolated_env(root / "home")})
    ws = make_workspace(root)
    shown = run_approving(ws, env, f"change the app {PROMPT_CANARY}", *RULES)
    receipt = root / "receipt.json"
    made = ketch("attest", "--out", str(receipt), cwd=ws, env=env)
    assert made.returncode == 0, made.stderr
    key = ketch("attest", "--public-key", cwd=ws, env=env)
    assert key.returncode == 0, key.stderr
    (root / "ketch.pem").write_text(key.stdout)
    return {
        "root": root,
        "ws": ws,
        "env": env,
        "receipt": receipt,
        "pem": root / "ketch.pem",
        "shown": shown,
    }


def test_the_receipt_lists_each_decision_with_its_origin(made: dict[str, Any]) -> None:
    stmt = statement(made["receipt"])
    calls = calls_by_tool(stmt)
    reads = {c["proposed"]["input"]["path"]: c for c in calls["read_file"]}
    assert reads["README.md"]["decision"] == "allow"
    assert reads["README.md"]["decidedBy"] == "proof"  # inside the workspace, not a secret
    (edit,) = calls["edit_file"]
    assert (edit["decision"], edit["approved"], edit["decidedBy"]) == ("ask", True, "person")
    assert edit["outcome"] == "succeeded" and edit["changed"] == ["src/app.py"]
    assert edit["profile"] == "manual" and edit["mode"] == "build"
    touch, curl = calls["shell"]
    assert (touch["decision"], touch["decidedBy"]) == ("allow", "rule")
    assert touch["decisions"][0]["rules"] == ["shell(touch:*)"]
    assert touch["ran"]["input"]["command"] == "touch made.txt"
    assert touch["changed"] == ["made.txt"]
    if shutil.which("bwrap"):
        assert touch["sandboxed"] in (True, False)  # what the sandbox said, either way
        assert touch["sandbox"], "a command that ran has the sandbox's record"
    assert (curl["decision"], curl["decidedBy"], curl["ran"]) == ("deny", "rule", None)
    assert curl["decisions"][0]["rules"] == ["shell(curl:*)"]
    assert curl["outcome"] == "refused"
    predicate = stmt["predicate"]
    assert predicate["models"][0]["provider"] == "scripted"
    assert predicate["models"][0]["model"]
    assert predicate["usage"]["responses"] == 6 and predicate["usage"]["inputTokens"] > 0
    assert predicate["files"]["changed"] == ["made.txt", "src/app.py"]


def test_the_subjects_are_the_changed_files_the_git_tree_and_the_journal(
    made: dict[str, Any],
) -> None:
    ws: Path = made["ws"]
    stmt = statement(made["receipt"])
    subjects = {s["name"]: s["digest"] for s in stmt["subject"]}
    for rel in ("src/app.py", "made.txt"):
        data = (ws / rel).read_bytes()
        assert subjects[rel]["sha256"] == hashlib.sha256(data).hexdigest()
        blob = subprocess.run(
            ["git", "hash-object", "--no-filters", rel], cwd=ws, capture_output=True, text=True
        )
        assert subjects[rel]["gitBlob"] == blob.stdout.strip()
    # The tree is git's own for HEAD plus exactly these changes (committed in a scratch clone).
    scratch = made["root"] / "clone"
    subprocess.run(["git", "clone", "-q", str(ws), str(scratch)], check=True)
    for rel in ("src/app.py", "made.txt"):
        shutil.copy2(ws / rel, scratch / rel)
    subprocess.run([*GIT, "add", "-A"], cwd=scratch, check=True)
    subprocess.run([*GIT, "commit", "-qm", "the session's changes"], cwd=scratch, check=True)
    tree = subprocess.run(
        ["git", "rev-parse", "HEAD^{tree}"], cwd=scratch, capture_output=True, text=True
    )
    assert subjects["git:tree"] == {"gitTree": tree.stdout.strip()}
    journal = [name for name in subjects if name.startswith("ketch:journal/")]
    assert len(journal) == 1 and len(subjects[journal[0]]["sha256"]) == 64
    assert stmt["predicate"]["journal"]["entries"] > 10


def test_ketch_verify_passes_with_the_store_and_with_only_the_public_key(
    made: dict[str, Any],
) -> None:
    ws, env = made["ws"], made["env"]
    done = ketch("verify", str(made["receipt"]), cwd=ws, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok: signature: verified by ketch's key" in done.stdout
    assert "ok: subjects: 2 file(s) match" in done.stdout
    assert "ok: journal: entries 1-" in done.stdout
    assert done.stdout.rstrip().endswith("verified")
    offline = ketch(
        "verify", str(made["receipt"]), "--key", str(made["pem"]), "--no-store", cwd=ws, env=env
    )
    assert offline.returncode == 0, offline.stdout + offline.stderr
    assert (
        "note: journal: not checked: the session store is not available (--no-store was given)"
        in offline.stdout
    )
    # ketch's key as an allowed_signers line (ssh-ed25519) verifies it too.
    line = ketch("attest", "--public-key", "ssh", cwd=ws, env=env)
    assert line.returncode == 0 and line.stdout.startswith("ssh-ed25519 ")
    signers = made["root"] / "ketch_signers"
    signers.write_text(f"ketch@example.com {line.stdout}")
    by_line = ketch(
        "verify", str(made["receipt"]), "--key", str(signers), "--no-store", cwd=ws, env=env
    )
    assert by_line.returncode == 0 and "verified by ketch@example.com SHA256:" in by_line.stdout


def test_the_receipt_verifies_with_securesystemslib_and_in_toto(made: dict[str, Any]) -> None:
    from cryptography.hazmat.primitives import serialization
    from in_toto.models.metadata import Envelope as InTotoEnvelope
    from securesystemslib.dsse import Envelope as SslibEnvelope
    from securesystemslib.signer import SSlibKey

    public = serialization.load_pem_public_key(made["pem"].read_bytes())
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    keyid = hashlib.sha256(raw).hexdigest()  # as docs/provenance.md defines it
    key = SSlibKey.from_crypto(public, keyid=keyid)
    data = envelope(made["receipt"])
    assert data["signatures"][0]["keyid"] == keyid
    accepted = SslibEnvelope.from_dict(copy.deepcopy(data)).verify(
        [key], 1
    )  # (it consumes the dict)
    assert keyid in accepted
    InTotoEnvelope.from_dict(copy.deepcopy(data)).verify_signature(
        {"keyid": keyid, "keytype": "ed25519", "scheme": "ed25519", "keyval": {"public": raw.hex()}}
    )
    # A changed payload does not verify there either.
    from securesystemslib.exceptions import VerificationError

    tampered = dict(
        copy.deepcopy(data),
        payload=base64.b64encode(base64.b64decode(data["payload"]) + b" ").decode(),
    )
    with pytest.raises(VerificationError):
        SslibEnvelope.from_dict(tampered).verify([key], 1)


def test_the_statement_is_a_valid_in_toto_v1_statement(made: dict[str, Any]) -> None:
    from google.protobuf import json_format
    from in_toto_attestation.v1 import statement_pb2
    from in_toto_attestation.v1.statement import Statement

    data = envelope(made["receipt"])
    assert data["payloadType"] == "application/vnd.in-toto+json"
    proto = json_format.Parse(base64.b64decode(data["payload"]), statement_pb2.Statement())
    Statement.copy_from_pb(proto).validate()  # raises on a schema violation
    assert proto.predicate_type == "https://ketch.dev/provenance/agent-session/v1"
    assert {s.name for s in proto.subject} >= {"src/app.py", "made.txt", "git:tree"}


def test_no_prompt_or_file_content_in_the_receipt_unless_asked(made: dict[str, Any]) -> None:
    ws, env, root = made["ws"], made["env"], made["root"]
    text = base64.b64decode(envelope(made["receipt"])["payload"]).decode()
    assert PROMPT_CANARY not in text and CONTENT_CANARY not in text
    assert str(ws) not in text  # reasons name workspace paths relative to it
    edit = calls_by_tool(statement(made["receipt"]))["edit_file"][0]
    assert set(edit["proposed"]["input"]["new_string"]) == {"digest", "length"}
    full = root / "full.json"
    done = ketch("attest", "--include-prompts", "--out", str(full), cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    assert os.stat(full).st_mode & 0o077 == 0  # content inside: readable by you only
    text = base64.b64decode(envelope(full)["payload"]).decode()
    assert PROMPT_CANARY in text and CONTENT_CANARY in text


def test_hashed_paths_name_no_file_and_still_verify(made: dict[str, Any]) -> None:
    ws, env, root = made["ws"], made["env"], made["root"]
    hashed = root / "hashed.json"
    done = ketch("attest", "--hash-paths", "--out", str(hashed), cwd=ws, env=env)
    assert done.returncode == 0, done.stderr
    text = base64.b64decode(envelope(hashed)["payload"]).decode()
    for name in ("src/app.py", "made.txt", "README.md", "touch made.txt"):
        assert name not in text
    stmt = statement(hashed)
    assert len(stmt["predicate"]["privacy"]["salt"]) == 32
    checked = ketch("verify", str(hashed), cwd=ws, env=env)
    assert checked.returncode == 0, checked.stdout
    assert "ok: subjects: 2 file(s) match" in checked.stdout
    (ws / "made.txt").write_bytes(b"x")
    try:
        failed = ketch("verify", str(hashed), cwd=ws, env=env)
    finally:
        (ws / "made.txt").write_bytes(b"")
    assert failed.returncode == 1 and "FAILED: subject made.txt (hmac-sha256:" in failed.stdout


def test_one_byte_changed_anywhere_fails_saying_which(made: dict[str, Any]) -> None:
    ws, env, root, receipt = made["ws"], made["env"], made["root"], made["receipt"]
    app = ws / "src" / "app.py"
    original = app.read_bytes()
    # 1. a subject file
    app.write_bytes(original[:-1] + bytes([original[-1] ^ 1]))
    try:
        done = ketch("verify", str(receipt), cwd=ws, env=env)
    finally:
        app.write_bytes(original)
    assert done.returncode == 1
    assert "FAILED: subject src/app.py: its SHA-256 differs from the receipt's" in done.stdout
    assert "signature: verified" in done.stdout  # only what changed is named
    # 2. the predicate (one byte of the signed payload)
    data = envelope(receipt)
    body = bytearray(base64.b64decode(data["payload"]))
    at = body.index(b'"decidedBy":"rule"') + len(b'"decidedBy":"')
    body[at] = ord("R")
    changed = root / "changed.json"
    changed.write_text(json.dumps(dict(data, payload=base64.b64encode(bytes(body)).decode())))
    done = ketch("verify", str(changed), cwd=ws, env=env)
    assert done.returncode == 1
    assert "FAILED: signature: ketch's key" in done.stdout
    assert "the receipt was changed after signing" in done.stdout
    # 3. the session's journal, in (a copy of) the store, by someone with SQL on the file
    state = root / "state-tampered"
    shutil.copytree(env["KETCH_STATE_DIR"], state)
    conn = sqlite3.connect(state / "sessions.db")
    conn.execute("DROP TRIGGER IF EXISTS journal_append_only")
    seq, payload = conn.execute(
        "SELECT seq, payload FROM journal WHERE kind = 'permission' ORDER BY seq LIMIT 1"
    ).fetchone()
    flipped = bytearray(payload)
    flipped[len(flipped) // 2] ^= 1
    with conn:
        conn.execute(
            "UPDATE journal SET payload = ? WHERE kind = 'permission' AND seq = ?",
            (bytes(flipped), seq),
        )
    conn.close()
    done = ketch("verify", str(receipt), cwd=ws, env={**env, "KETCH_STATE_DIR": str(state)})
    assert done.returncode == 1, done.stdout
    assert "FAILED: journal: session ses_" in done.stdout and f"entry {seq}" in done.stdout
    assert "signature: verified" in done.stdout and "subjects: 2 file(s) match" in done.stdout


def test_a_policy_holds_or_names_each_call_that_breaks_it(made: dict[str, Any]) -> None:
    ws, env, root = made["ws"], made["env"], made["root"]
    policy = root / "policy.toml"
    policy.write_text(
        'version = 1\nwrite_origins = ["person", "proof"]\nmodels = ["scripted-*"]\njournal = true\n'
    )
    done = ketch("verify", str(made["receipt"]), "--policy", str(policy), cwd=ws, env=env)
    # The touch was allowed by a rule, not by a person or a proof: named, one line.
    assert done.returncode == 1, done.stdout
    failures = [line for line in done.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failures) == 1 and "policy write_origins: call" in failures[0]
    assert "(shell, turn 1)" in failures[0] and "decided by rule" in failures[0]
    policy.write_text('write_origins = ["person", "proof", "rule"]\nmodels = ["scripted-*"]\n')
    done = ketch("verify", str(made["receipt"]), "--policy", str(policy), cwd=ws, env=env)
    assert done.returncode == 0, done.stdout
    assert f"ok: policy: {policy} holds" in done.stdout
