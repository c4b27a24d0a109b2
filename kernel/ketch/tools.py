"""What a tool is, to the kernel.

A tool declares its input as a pydantic model (that schema is what the model sees),
its effects (reads, writes, executes, network), whether it is mutating, and which
concrete things one call touches (:class:`Access`, the scope policy rules and
approvals match on). It returns a :class:`ToolResult`: success or an error the model
can act on. A tool never raises into the loop and never authorizes itself; when it
discovers a new thing to touch mid-run (a redirect to another host), it asks
``ctx.authorize(access)``, which goes back through the loop's policy.

Plugins register tools with ``ketch_register_tools(register)``; ``register`` takes a
:class:`Tool` instance or a plain typed function with a docstring (made a tool by the
``function_tools`` plugin: ``ketch_tool_from``; mark it with :func:`tool`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from ketch.messages import ImagePart
from ketch.stash import Stash

if TYPE_CHECKING:  # pragma: no cover
    from ketch.hooks import Hooks


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


# --- registering -------------------------------------------------------------------------


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


def as_tool(obj: Any, hooks: Hooks | None = None) -> Tool:
    """Turn what a plugin passed to ``register`` into a Tool: an instance, a class, or
    a function made a tool by a plugin (``ketch_tool_from``, asked through ``hooks``)."""
    if isinstance(obj, Tool):
        return obj
    if isinstance(obj, type) and issubclass(obj, Tool):
        return obj()
    if not callable(obj):
        raise TypeError(f"cannot register {obj!r} as a tool: pass a Tool or a typed function")
    if hooks is None:  # a function is made a tool by a plugin: the kernel's hooks ask it
        raise TypeError(
            f"cannot make {obj!r} a tool without the kernel's hooks: as_tool(obj, kernel.hooks)"
        )
    made = hooks.first("ketch_tool_from", obj=obj)
    if isinstance(made, Exception):  # the plugin could not make it a tool: why
        raise made
    if made is None:
        raise TypeError(
            f"cannot register {obj!r} as a tool: no loaded plugin makes a function a tool "
            "(ketch_tool_from); pass a Tool"
        )
    return made  # type: ignore[no-any-return]
