"""The public API's names and signatures, as text (held by ``tests/meta/api_snapshot.txt``).

    python -m tests.meta.api_snapshot           # print it
    python -m tests.meta.api_snapshot --write   # update the checked-in snapshot, deliberately

Each name of ``ketch.api`` is one entry: a function's signature; a class's bases, its
fields (pydantic models, dataclasses) and the signatures of the public methods and
properties it defines; a constant's value; a module's name. Annotations are rendered
as written (strings), so the snapshot does not depend on what else is imported.
"""

from __future__ import annotations

import argparse
import dataclasses
import enum
import importlib
import inspect
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = Path(__file__).with_name("api_snapshot.txt")


def _signature(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _type(annotation: Any) -> str:
    if isinstance(annotation, type):
        return annotation.__qualname__
    return repr(annotation).replace("typing.", "")


def _fields(cls: type) -> list[str]:
    model_fields = getattr(cls, "model_fields", None)
    if isinstance(model_fields, dict):
        return [
            f"{name}: {_type(info.annotation)}" + ("" if info.is_required() else " = ...")
            for name, info in model_fields.items()
        ]
    if dataclasses.is_dataclass(cls):
        return [f"{f.name}: {f.type}" for f in dataclasses.fields(cls)]
    return []


def _members(cls: type) -> list[str]:
    out = []
    for name, value in sorted(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if name.startswith("model_") and hasattr(cls, "model_fields"):
            continue
        if isinstance(value, property):
            out.append(f"property {name}")
        elif isinstance(value, (classmethod, staticmethod)):
            out.append(f"{type(value).__name__} {name}{_signature(value.__func__)}")
        elif inspect.isfunction(value):
            prefix = "async def" if inspect.iscoroutinefunction(value) else "def"
            out.append(f"{prefix} {name}{_signature(value)}")
        elif type(value).__name__ == "cached_property":
            out.append(f"cached_property {name}")
    return out


def describe(name: str, value: Any) -> list[str]:
    if inspect.ismodule(value):
        return [f"{name}: module {value.__name__}"]
    if isinstance(value, type):
        bases = ", ".join(b.__qualname__ for b in value.__bases__ if b is not object)
        lines = [f"class {name}({bases})"]
        lines += [f"    field {f}" for f in _fields(value)]
        if issubclass(value, enum.Enum):
            lines += [f"    member {m.name} = {m.value!r}" for m in value]
        lines += [f"    {m}" for m in _members(value)]
        return lines
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        prefix = "async def" if inspect.iscoroutinefunction(value) else "def"
        return [f"{prefix} {name}{_signature(value)}"]
    if isinstance(value, (str, int, float, tuple, frozenset)):
        return [f"{name} = {value!r}"]
    return [f"{name}: {type(value).__module__}.{type(value).__qualname__} {value!r}"]


def render() -> str:
    api = importlib.import_module("ketch.api")
    lines = []
    for name in sorted(api.__all__, key=str.lower):
        lines += describe(name, getattr(api, name))
    text = "\n".join(lines) + "\n"
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # object addresses change from run to run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.meta.api_snapshot", description=__doc__)
    parser.add_argument("--write", action="store_true", help=f"update {SNAPSHOT.name}")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "kernel"))
    text = render()
    if args.write:
        SNAPSHOT.write_text(text, encoding="utf-8")
        print(f"wrote {SNAPSHOT.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
