"""What a tool is, to the kernel.

A tool declares its input as a pydantic model (that schema is what the model sees),
its effects (reads, writes, executes, network), whether it is mutating, and which
concrete things one call touches (:class:`Access`, the scope policy rules and
approvals match on). It returns a :class:`ToolResult`: success or an error the model
can act on. A tool never raises into the loop and never authorizes itself; when it
discovers a new thing to touch mid-run (a redirect to another host), it asks
``ctx.authorize(access)``, which goes back through the loop's policy.

Plugins register tools with ``ketch_register_tools(register)``; ``register`` takes a
:class:`Tool` instance or a plain typed function with a docstring (see
:func:`function_tool`).
"""

from __future__ import annotations

import asyncio
import inspect
import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, create_model

from ketch.messages import ImagePart
from ketch.stash import Stash


class Effect(StrEnum):
    READ = "read"  # reads files
    WRITE = "write"  # creates, changes or deletes files
    EXECUTE = "execute"  # runs programs
    NETWORK = "network"  # talks to other hosts


class Access(BaseModel):
    """One concrete thing a call touches: the unit policy rules and approvals scope to.

    ``target`` is an absolute, resolved path for READ/WRITE; the full command line for
    EXECUTE; a URL for NETWORK.
    """

    model_config = ConfigDict(frozen=True)

    effect: Effect
    target: str
    # Extra facts for policy (e.g. {"cwd": "..."} for a command, {"host": ...} for a URL).
    detail: dict[str, Any] = Field(default_factory=dict)


class ToolResult(BaseModel):
    """What a tool returns. ``output`` is what the model sees; ``diff`` is shown to the user;
    ``images`` go to the model with the output (to one that takes images)."""

    ok: bool = True
    output: str = ""
    diff: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    images: list[ImagePart] = Field(default_factory=list)

    @classmethod
    def success(cls, output: str, **kw: Any) -> ToolResult:
        return cls(ok=True, output=output, **kw)

    @classmethod
    def error(cls, output: str, **kw: Any) -> ToolResult:
        return cls(ok=False, output=output, **kw)


@dataclass
class ToolContext:
    """What a running tool may use. It holds no way to approve anything itself."""

    workspace: Path
    session_id: str
    settings: Any  # ketch.settings.Settings
    state: dict[str, Any]  # per-session plugin state, keyed by the plugin's own name
    authorize: Callable[[Access], Awaitable[bool]]
    emit: Callable[[Any], None] = lambda event: None
    tool_call_id: str = ""
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    # Show new output of this running call to the person (whole lines, a few times a
    # second at most): it goes through the result filters, then out as a ``tool_output``
    # event. What the model gets is still the result ``run`` returns.
    output: Callable[[str], None] = lambda text: None
    # The session's in-memory plugin state (``ketch.stash``; never saved), e.g. a notice given once.
    stash: Stash = field(default_factory=Stash)

    def plugin_state(self, key: str) -> dict[str, Any]:
        return self.state.setdefault(key, {})


# The capability of a tool that runs a turn of its own on the person's behalf (an agent):
# while it runs, ``ketch.calls.running_call`` tells it the call's session, approver and
# tool narrowing, which it passes on unchanged.
DELEGATES = "delegates"


InputT = TypeVar("InputT", bound=BaseModel)


class Tool(Generic[InputT]):
    """Base class for tools with full control, generic in its input model.

    Subclasses name their model (``class ReadFile(Tool[ReadArgs])``), set ``name``,
    ``description``, ``input_model``, ``effects`` and ``mutating``, and implement
    ``run``; ``run``, ``accesses``, ``summary`` and ``preview`` then receive that model.
    Override ``accesses`` to scope what one call touches (the default derives nothing,
    so policy treats the call by its effects).
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    input_model: type[InputT]  # set on the class (a ClassVar cannot hold a type variable)
    effects: ClassVar[frozenset[Effect]] = frozenset()
    mutating: ClassVar[bool] = True
    # True when the same call can rightly give a new result each time (reading a
    # background job's new output): the loop's duplicate-call breaker leaves it alone.
    repeatable: ClassVar[bool] = False
    # Whether calls may run side by side with other such calls of the same response.
    # None: read-only tools do, mutating ones do not.
    concurrent: ClassVar[bool | None] = None
    # What the tool is, for the plugins that care, in the words of the contract that
    # defines each (a library's constant: "runs its commands sandboxed"; the kernel's
    # own: :data:`DELEGATES`).
    capabilities: ClassVar[frozenset[str]] = frozenset()
    plugin: str = ""  # filled by the registry: which plugin registered it

    def accesses(self, args: InputT, ctx: ToolContext) -> list[Access]:
        return []

    def summary(self, args: InputT) -> str:
        """One line shown to the user for this call (default: the input as JSON)."""
        return args.model_dump_json(exclude_defaults=True)

    async def preview(self, args: InputT, ctx: ToolContext) -> str | None:
        """What the call would do, shown *before* the person approves it: a unified diff
        for an edit, the full command line with its cwd for a command. It must not
        change anything. None (the default): the summary says enough."""
        return None

    async def run(self, args: InputT, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError

    def input_schema(self) -> dict[str, Any]:
        schema = self.input_model.model_json_schema()
        schema.pop("title", None)
        return schema


# --- plain functions as tools ---------------------------------------------------------

_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and per-argument descriptions.

    Understands Google style (``Args:`` sections) and Sphinx ``:param x:`` lines.
    """
    if not doc:
        return "", {}
    text = inspect.cleandoc(doc)
    params: dict[str, str] = {}
    description_lines: list[str] = []
    in_args = False
    current: str | None = None
    for line in text.splitlines():
        stripped = line.strip()
        sphinx = re.match(r":param\s+(?:\w+\s+)?(\w+)\s*:\s*(.*)", stripped)
        if sphinx:
            params[sphinx.group(1)] = sphinx.group(2).strip()
            continue
        if stripped.lower() in ("args:", "arguments:", "parameters:"):
            in_args = True
            continue
        if in_args:
            if stripped.endswith(":") and not line.startswith((" ", "\t")):
                in_args = False  # next section (Returns:, Raises:)
                continue
            match = _ARG_LINE.match(line)
            if match and line.startswith((" ", "\t")) and len(line) - len(line.lstrip()) <= 8:
                current = match.group(1).lstrip("*")
                params[current] = match.group(3).strip()
            elif current and stripped:
                params[current] = f"{params[current]} {stripped}".strip()
            continue
        if re.match(r"^(returns?|raises|yields|examples?):$", stripped.lower()):
            in_args = False
            current = None
            description_lines.append("\x00")  # stop collecting description
            continue
        description_lines.append(line)
    description = "\n".join(description_lines).split("\x00")[0].strip()
    return description, params


class FunctionTool(Tool[BaseModel]):
    """A tool made from a plain typed function: schema and description from its signature."""

    def __init__(
        self,
        func: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        effects: frozenset[Effect] | set[Effect] | None = None,
        mutating: bool | None = None,
    ) -> None:
        self.func = func
        self.name = name or func.__name__  # type: ignore[misc]
        doc_description, param_docs = parse_docstring(func.__doc__)
        self.description = description or doc_description or self.name  # type: ignore[misc]
        meta = getattr(func, "__ketch_tool__", {})
        declared = effects if effects is not None else meta.get("effects")
        self.effects = frozenset(declared or ())  # type: ignore[misc]
        if mutating is None:
            mutating = meta.get("mutating")
        if mutating is None:
            # Unknown effects are assumed mutating: safe by default (not offered in plan mode).
            mutating = not self.effects or bool(self.effects - {Effect.READ})
        self.mutating = mutating  # type: ignore[misc]
        self._wants_ctx = False
        self.input_model = self._build_model(func, param_docs)

    def _build_model(self, func: Callable[..., Any], docs: dict[str, str]) -> type[BaseModel]:
        hints = typing.get_type_hints(func)
        fields: dict[str, Any] = {}
        for param in inspect.signature(func).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"tool {self.name}: *args/**kwargs are not supported")
            annotation = hints.get(param.name, Any)
            if annotation is ToolContext or param.name == "ctx":
                self._wants_ctx = True
                continue
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                annotation,
                Field(default, description=docs.get(param.name) or None),
            )
        model_name = "".join(part.title() for part in self.name.split("_")) + "Input"
        return create_model(model_name, __config__=ConfigDict(extra="forbid"), **fields)

    async def run(self, args: BaseModel, ctx: ToolContext) -> ToolResult:
        kwargs = {k: getattr(args, k) for k in type(args).model_fields}
        if self._wants_ctx:
            kwargs["ctx"] = ctx
        if inspect.iscoroutinefunction(self.func):
            value = await self.func(**kwargs)
        else:
            value = await asyncio.to_thread(self.func, **kwargs)
        if isinstance(value, ToolResult):
            return value
        if value is None:
            return ToolResult.success("")
        if isinstance(value, str):
            return ToolResult.success(value)
        import json

        return ToolResult.success(json.dumps(value, default=str, ensure_ascii=False))


def tool(
    func: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    effects: set[Effect] | frozenset[Effect] | None = None,
    mutating: bool | None = None,
) -> Any:
    """Mark a function as a tool and declare its effects (optional decorator).

    ``@tool(effects={Effect.READ})`` makes a read-only tool that plan mode may offer.
    Without declared effects a function tool counts as mutating.
    """

    def mark(f: Callable[..., Any]) -> Callable[..., Any]:
        f.__ketch_tool__ = {  # type: ignore[attr-defined]
            "name": name,
            "effects": frozenset(effects) if effects is not None else None,
            "mutating": mutating,
        }
        return f

    return mark(func) if func is not None else mark


def as_tool(obj: Any) -> Tool:
    """Turn what a plugin passed to ``register`` into a Tool (instance, class or function)."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, type) and issubclass(obj, Tool):
        return obj()
    if callable(obj):
        meta = getattr(obj, "__ketch_tool__", {})
        return FunctionTool(obj, name=meta.get("name"))
    raise TypeError(f"cannot register {obj!r} as a tool: pass a Tool or a typed function")
