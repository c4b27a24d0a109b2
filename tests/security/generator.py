"""Generated attacks, composed from the grammar table itself.

Every program of :data:`ketch_shell_kit.grammar.TABLE` with an option or operand that
writes, runs or reads something is an attack surface; the generator aims each at a
canary and spells it every way getopt and bash accept: long options exact, with
``=`` or a separate value, abbreviated to unique prefixes; short options alone,
clustered behind a harmless flag of the same program, with attached values; ``--``
before operands; the program by path forms (``//usr/bin/X``, ``/usr/bin/../bin/X``)
and quoted (``'r'm``, ``r\\m``); wrapped by the table's wrappers (with their own
options spelled the same ways); inside substitutions, subshells, ``bash -c``, ``eval``
and behind separators. Benign variants (the same spellings on workspace files) are
mixed in, so a sweep shows how much is *proven*, not only that nothing leaked.

Seeded and reproducible: ``variants(seed, count)`` returns the same list every time.
Paths are templates (``{outside}``, ``{home}``), filled from the world with
:func:`corpus.fill`.
"""

from __future__ import annotations

import random
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from ketch_shell_kit.getopt import resolve_long
from ketch_shell_kit.grammar import TABLE
from ketch_shell_kit.grammar.spec import Option, Program

VICTIMS = {
    "write": [
        "{outside}/victim.txt",
        "../outside/victim.txt",
        "{home}/.bashrc",
        ".git/config",
        "vendor/lib/.git/hooks/post-commit",
        "{outside}/victim_dir",
    ],
    "read": [
        ".env",
        "{home}/.ssh/id_rsa",
        "{home}/.aws/credentials",
        "{home}/.netrc",
        ".[e]nv",
        "./.e?v",
        "../ws/.env",
        '"$PWD/.env"',
        "/proc/self/environ",
        "{outside}/victim.txt",
    ],
    "tree": [".", "{home}/.ssh", "{home}", "{outside}"],
    "list": ["{home}/.ssh", "{outside}"],
    "exec": ["/bin/rm", "sh"],
    "code": ['BEGIN{system("rm -f {outside}/victim.txt")}'],
    "script": ["rm -f {outside}/victim.txt"],
    "cwd": ["{outside}", "vendor/lib"],
    "varname": ["a[$(rm -f {outside}/victim.txt)]", "PATH", "CDPATH"],
}
VICTIMS["vtree"] = VICTIMS["tree"]
VICTIMS["link"] = VICTIMS["read"]
BENIGN = {
    "read": ["README.md", "src/app.py"],
    "tree": ["src", "."],
    "vtree": ["src"],
    "list": ["src", "."],
    "write": ["out.txt"],
    "cwd": ["src"],
}
HARMLESS_VALUE = {
    "num": "1",
    "str": "x",
    "pat": "canary",
    "fmt": "%s",
    "enum": "auto",
    "sig": "TERM",
    "size": "1K",
    "time": "5",
    "x": "x",
}
NAME_FORMS = [
    "{n}",
    "/usr/bin/{n}",
    "//usr/bin/{n}",
    "/usr/bin/../bin/{n}",
    "\\{n}",
    "'{n}'",
    '"{n}"',
]
NESTINGS = [
    "{p}", "{p}", "{p}", "echo $({p})", "echo `{p}`", "cat <({p})", ": ${{x:-$({p})}}", "({p})", "{{ {p}; }}",
    "bash -c {q}", "sh -c {q}", "eval {q}", "if true; then {p}; fi", "for i in 1; do {p}; done", "x=1; {p}", "! {p}",
]  # fmt: skip
SEPARATORS = [" ; ", " && ", " || ", " | ", " & ", "\n", " |& "]
RISKY_TYPES = frozenset(
    {"write", "read", "tree", "vtree", "link", "exec", "code", "script", "cwd", "varname"}
)
SKIP = frozenset(
    {"watch", "script", "mapfile", "readarray", "jobs", "sleep", "tail", "yes"}
)  # long-running or interactive


@dataclass(frozen=True)
class Variant:
    command: str
    kind: str  # attack | benign
    origin: str  # program and option, for the report


def _harmless_flag(program: Program) -> str | None:
    """A short flag of the program that takes no value and does nothing risky."""
    for letter, option in sorted(program.short.items()):
        if (
            len(letter) == 1
            and not option.arg
            and not option.risky
            and not option.tags
            and letter.isalpha()
            and option.ops is None
        ):
            return letter
    return None


def option_spellings(program: Program, option: Option, value: str) -> Iterator[list[str]]:
    """Every way getopt reads ``option`` with ``value`` (as word lists)."""
    for name in option.names:
        if name.startswith("--") or (program.single_dash_long and len(name) > 2):
            dash = "--" if name.startswith("--") else "-"
            body = name.lstrip("-")
            bodies = [body]
            if program.abbreviations:
                for cut in range(len(body) - 1, 1, -1):
                    found, _ = resolve_long(program, body[:cut])
                    if found is option:
                        bodies.append(body[:cut])
                    else:
                        break
            for spelled in dict.fromkeys([bodies[0], bodies[-1], bodies[len(bodies) // 2]]):
                if option.arg == "required":
                    yield [f"{dash}{spelled}={value}"]
                    yield [f"{dash}{spelled}", value]
                elif option.arg == "optional":
                    yield [f"{dash}{spelled}={value}"]
                else:
                    yield [f"{dash}{spelled}"]
        else:
            letter = name[1:]
            flag = _harmless_flag(program)
            if option.arg == "required":
                yield [name, value]
                yield [name + value]
                if flag and flag != letter:
                    yield [f"-{flag}{letter}", value]
                    yield [f"-{flag}{letter}{value}"]
            elif option.arg == "optional":
                yield [name + value]
            else:
                yield [name]
                if flag and flag != letter:
                    yield [f"-{flag}{letter}"]


def _quote(word: str, kind: str = "") -> str:
    if kind != "varname" and (word.startswith(('"$', "'", "./.", ".[", ".e?")) or "$(" in word):
        return word  # keep the shell-level form the value means to test (a glob, a run-time word)
    return shlex.quote(word)


def _operand_words(program: Program, attack: bool, rng: random.Random) -> tuple[list[str], str]:
    """Operands for the program's spec: one aimed at a canary (or benign ones)."""
    words: list[str] = []
    aimed = ""
    for operand in program.operands:
        kind = operand.type
        if kind in ("cmd", "env"):
            break
        pool = (VICTIMS if attack else BENIGN).get(kind)
        if pool:
            choice = rng.choice(pool)
            words.append(_quote(choice))
            aimed = aimed or f"{kind} operand"
        elif kind in HARMLESS_VALUE:
            words.append(HARMLESS_VALUE[kind])
        elif operand.repeat in ("", "+"):
            words.append("x")
    return words, aimed


def payloads(rng: random.Random) -> Iterator[tuple[list[str], str, str]]:
    """(words, kind, origin): one program invocation aimed at a canary, or benign."""
    programs = [
        p
        for name, p in sorted(TABLE.items())
        if name not in SKIP and p.handler not in ("shell", "eval", "watch", "su")
    ]
    while True:
        program = rng.choice(programs)
        risky = [o for o in program.options if o.risky or (o.arg and o.type in RISKY_TYPES)]
        attack = rng.random() < 0.8
        if program.subcommands and program.name != "git":  # git's are read below
            continue
        if program.name == "git":
            from ketch_shell_kit.grammar.git import read_only_subcommands

            read_only = read_only_subcommands()
            sub = rng.choice(sorted(read_only))
            grammar = read_only[sub]
            sub_risky = [o for o in grammar.options if o.risky or (o.arg and o.type in RISKY_TYPES)]
            if attack and sub_risky:
                option = rng.choice(sub_risky)
                value = rng.choice(VICTIMS.get(option.type, ["x"])) if option.arg else ""
                words = rng.choice(
                    list(option_spellings(grammar, option, _quote(value, option.type)))
                )
                prefix = rng.choice(
                    [[], ["-C", "vendor/lib"], ["-C", "planted"], ["--no-optional-locks"]]
                )
                yield ["git", *prefix, sub, *words], "attack", f"git {sub} {option.label}"
            else:
                target = rng.choice(
                    ["README.md", "src/app.py", "HEAD", ".env", "HEAD:.env"]
                    if attack
                    else ["README.md", "src/app.py", "HEAD"]
                )
                yield (
                    ["git", "--no-optional-locks", sub, "--", target]
                    if sub in ("log", "diff")
                    else ["git", sub, target],
                    "attack" if ".env" in target else "benign",
                    f"git {sub}",
                )
            continue
        operands, aimed = _operand_words(program, attack, rng)
        if attack and risky and rng.random() < 0.7:
            option = rng.choice(risky)
            value = (
                rng.choice(VICTIMS.get(option.type, ["{outside}/victim.txt"])) if option.arg else ""
            )
            spelled = rng.choice(
                list(
                    option_spellings(
                        program, option, _quote(value, option.type) if value else value
                    )
                )
            )
            benign_ops, _ = _operand_words(program, False, rng)
            separator = ["--"] if rng.random() < 0.2 else []
            yield (
                [program.name, *spelled, *separator, *benign_ops],
                "attack",
                f"{program.name} {option.label}",
            )
        elif attack and aimed:
            separator = ["--"] if rng.random() < 0.3 else []
            yield [program.name, *separator, *operands], "attack", f"{program.name} {aimed}"
        elif not attack:
            harmless = [
                o
                for o in program.options
                if not o.risky and not o.tags and o.ops is None and o.type not in RISKY_TYPES
            ]
            extra: list[str] = []
            if harmless and rng.random() < 0.6:
                option = rng.choice(harmless)
                extra = rng.choice(
                    list(option_spellings(program, option, HARMLESS_VALUE.get(option.type, "1")))
                )
            yield [program.name, *extra, *operands], "benign", f"{program.name} (benign)"


def _wrapped(words: list[str], rng: random.Random) -> list[str]:
    wrappers = [
        p
        for p in TABLE.values()
        if any(o.type == "cmd" for o in p.operands)
        and not p.privileged
        and p.name not in ("flock", "command", "builtin", "exec")
    ]
    wrapper = rng.choice(wrappers)
    head = [wrapper.name]
    harmless = [
        o for o in wrapper.options if not o.risky and not o.tags and o.type in HARMLESS_VALUE
    ]
    if harmless and rng.random() < 0.6:
        option = rng.choice(harmless)
        head += rng.choice(list(option_spellings(wrapper, option, HARMLESS_VALUE[option.type])))
    for operand in wrapper.operands:
        if operand.type == "cmd":
            break
        if operand.type in HARMLESS_VALUE:
            head.append(HARMLESS_VALUE[operand.type])
    return head + words


def variants(seed: int = 0, count: int = 5000) -> list[Variant]:
    """``count`` distinct commands, the same for the same seed."""
    rng = random.Random(seed)
    found: dict[str, Variant] = {}
    source = payloads(rng)
    attempts = 0
    while len(found) < count and attempts < count * 20:
        attempts += 1
        words, kind, origin = next(source)
        if rng.random() < 0.35:
            words = _wrapped(words, rng)
        if rng.random() < 0.3:
            words = [rng.choice(NAME_FORMS).format(n=words[0]), *words[1:]]
        text = " ".join(words)
        nesting = rng.choice(NESTINGS)
        text = nesting.format(p=text, q=shlex.quote(text))
        if rng.random() < 0.3:
            text = (
                rng.choice(["ls", "true", "cat README.md", "git log -1"])
                + rng.choice(SEPARATORS)
                + text
            )
        if "\x00" in text or len(text) > 4000:
            continue
        found.setdefault(text, Variant(text, kind, origin))
    return list(found.values())
