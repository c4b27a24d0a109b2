"""System-prompt parts contributed by context-builder plugins."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptPart:
    """One section of the system prompt. Lower ``order`` comes first.

    Conventional orders: 0 identity, 100 environment, 200 instruction files,
    300 repository overview, 400 memory, 500 tools, 900 anything else.
    The system prompt is never compacted: when it alone does not fit, the turn stops
    with a breakdown of its largest parts.
    """

    text: str
    title: str = ""
    order: int = 900
    source: str = ""  # the plugin or file it came from

    def render(self) -> str:
        return f"# {self.title}\n\n{self.text}" if self.title else self.text


def join_parts(parts: list[PromptPart]) -> str:
    return "\n\n".join(p.render() for p in sorted(parts, key=lambda p: p.order) if p.text.strip())
