"""Differential check of the analyser against real bash.

tree-sitter-bash is not bash. For every command the analyser says it understands,
bash runs it -- inside the sandbox, in a throwaway copy of the workspace, with an
empty PATH, so no external program runs at all: bash's ``command_not_found_handle``
logs each program name it would have started instead. Every name bash tries to run
must be a program (or wrapper) the analysis listed; a name bash runs that the
analysis missed would be a command the policy never saw.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings

from ketch_sandbox.bwrap import probe
from ketch_shell_kit import analyse
from tests.policy.policy_kit import make_workspace
from tests.policy.test_policy_corpus import CORPUS
from tests.policy.test_policy_property import commands

PROBE = probe()
pytestmark = pytest.mark.skipif(
    not PROBE.available,
    reason=f"needs a working bubblewrap sandbox to run commands safely: {PROBE.reason}",
)
BASH = shutil.which("bash") or "/bin/bash"
HANDLER = 'command_not_found_handle() { printf "%s\\0" "$1" >> "$KETCH_DIFF_LOG"; return 0; }\n'
# ``type x: not found`` is type's answer, not a program bash tried to start.
NOT_FOUND = re.compile(r"(?:^|: )(?<!type: )([^\s:]+): (?:command )?not found")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bashdiff")
    (root / "bin").mkdir()
    (root / "env.sh").write_text(HANDLER)
    for name in ("bash", "sh"):  # shells started by name still log (as bash, so BASH_ENV is read)
        script = root / "bin" / name
        script.write_text(f'#!{BASH}\nexec {BASH} "$@"\n')
        script.chmod(0o755)
    return root


def executed(lab: Path, command: str) -> set[str]:
    """The program names bash tries to run for ``command`` (none of them runs)."""
    ws_root = lab / "runs"
    shutil.rmtree(ws_root, ignore_errors=True)
    ws = make_workspace(ws_root)
    log = lab / "log"
    log.unlink(missing_ok=True)
    argv = [
        PROBE.path,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--bind",
        str(lab),
        str(lab),
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        "--setenv",
        "PATH",
        str(lab / "bin"),
        "--setenv",
        "BASH_ENV",
        str(lab / "env.sh"),
        "--setenv",
        "KETCH_DIFF_LOG",
        str(log),
        "--setenv",
        "HOME",
        str(lab / "home"),
        "--",
        BASH,
        "-c",
        command,
    ]
    done = subprocess.run(
        argv,
        cwd=ws,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    names = {n for n in log.read_text().split("\0") if n} if log.exists() else set()
    names |= {m.group(1) for m in NOT_FOUND.finditer(done.stderr)}
    return {os.path.basename(n) for n in names}


def analysed(command: str, ws: Path) -> set[str] | None:
    analysis = analyse(command, ws)
    if not analysis.understood:
        return None
    names = {os.path.basename(p.program) for p in analysis.parts if p.program}
    names |= {
        os.path.basename(w[0].value) for p in analysis.parts for w in p.wrappers if w and w[0].value
    }
    if names & {"egrep", "fgrep"}:
        names.add("grep")  # Debian's egrep and fgrep are scripts that run grep
    return names


def test_the_harness_sees_what_bash_runs(lab: Path) -> None:
    """The control: names in substitutions, heredocs and nested shells are all logged."""
    seen = executed(
        lab, "echo $(rmx -f a) `idx`; timeout 5 lsx; sh -c 'curlx z'; cat <<EOF\n$(whoamix)\nEOF\n"
    )
    assert {"rmx", "idx", "timeout", "curlx", "whoamix", "cat"} <= seen


@pytest.mark.parametrize("command", sorted({c for c, _, _ in CORPUS}), ids=lambda c: repr(c)[:50])
def test_bash_runs_nothing_the_analysis_missed_in_the_corpus(lab: Path, command: str) -> None:
    names = analysed(command, lab)
    if names is None:
        pytest.skip("the analyser does not claim to understand it (it asks)")
    missed = executed(lab, command) - names
    assert missed == set(), f"bash ran {missed} for {command!r}; the analysis listed {names}"


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(composed=commands)
# Found by this test: bash ran "EOF" (a nested heredoc's end, read its own way).
@example(composed=("echo $({ cat <<EOF\n$({ cat <<EOF\n$(ls)\nEOF\n})\nEOF\n})", frozenset({"ls"})))
def test_bash_runs_nothing_the_analysis_missed_in_compositions(
    lab: Path, composed: tuple[str, frozenset[str]]
) -> None:
    text, _ = composed
    names = analysed(text, lab)
    if names is None:
        return
    missed = executed(lab, text) - names
    assert missed == set(), f"bash ran {missed} for {text!r}; the analysis listed {names}"


def _security(module: str):  # noqa: ANN202 - tests/security is a directory of scripts, not a package
    import importlib
    import sys

    folder = Path(__file__).resolve().parents[1] / "security"
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return importlib.import_module(module)


class _Paths:
    """Stand-in world paths for the corpus templates (nothing there is touched: no program runs)."""

    workspace = Path("/nonexistent/ws")
    home = Path("/nonexistent/home")
    outside = Path("/nonexistent/outside")
    tcp_port = 9
    unix_socket = Path("/nonexistent/sock")


_CORPUS = _security("corpus")
ADVERSARIAL = sorted({_CORPUS.fill(case.command, _Paths) for case in _CORPUS.CASES})
GENERATED = [_CORPUS.fill(v.command, _Paths) for v in _security("generator").variants(7, 150)]


@pytest.mark.parametrize("command", ADVERSARIAL + GENERATED, ids=lambda c: repr(c)[:50])
def test_bash_runs_nothing_the_analysis_missed_in_the_adversarial_corpus(
    lab: Path, command: str
) -> None:
    names = analysed(command, lab)
    if names is None:
        pytest.skip("the analyser does not claim to understand it (it asks)")
    missed = executed(lab, command) - names
    assert missed == set(), f"bash ran {missed} for {command!r}; the analysis listed {names}"
