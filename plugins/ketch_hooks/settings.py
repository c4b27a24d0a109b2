"""The ``[hooks]`` table: ``[[hooks.EVENT]]`` entries, each a matcher and a command.

Keys of an entry (Claude Code's handler fields where they exist):

* ``matcher``: what the hook is for (tool names for tool events, see ``matching``);
* ``command``: a shell command line (``sh -c``), or with ``args`` the program to run
  with those arguments and no shell;
* ``timeout``: seconds before the hook is stopped and ignored (default 60);
* ``async``: run it without waiting for it (its answer is not read);
* ``claude_names``: give it Claude Code's tool names on stdin (``Bash``, not
  ``shell``); ``ketch hooks import`` sets it for hooks it brings over;
* ``plugin_root``: the folder of the Claude Code plugin the hook belongs to:
  ``${CLAUDE_PLUGIN_ROOT}`` in ``command`` and ``args`` is expanded to it, and the
  hook gets ``CLAUDE_PLUGIN_ROOT`` in its environment. A hook naming
  ``${CLAUDE_PLUGIN_ROOT}`` without one does not run (it is reported): the path would
  otherwise start at ``/``;
* ``plugin_data``: that plugin's persistent data folder, ``${CLAUDE_PLUGIN_DATA}``, the
  same way.

Event names ketch does not know are accepted and never run (a Claude Code settings
file may name newer events).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, RootModel

from ketch.api import SettingsSection

DEFAULT_TIMEOUT = 60.0


class HookCommand(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    matcher: str = "*"
    command: str = Field(min_length=1)
    args: list[str] | None = None
    timeout: float = Field(DEFAULT_TIMEOUT, gt=0, le=3600)
    background: bool = Field(False, alias="async")
    claude_names: bool = False
    plugin_root: str | None = None
    plugin_data: str | None = None

    def argv(self) -> tuple[list[str] | None, str]:
        """The command to run, Claude Code's variables expanded; or None and why not."""
        from ketch_claude_kit.claude_vars import expand, unknown_note

        known = {"CLAUDE_PLUGIN_ROOT": self.plugin_root, "CLAUDE_PLUGIN_DATA": self.plugin_data}
        command, missing = expand(self.command, known)
        args = []
        for arg in self.args or []:
            text, more = expand(arg, known)
            args.append(text)
            missing += [m for m in more if m not in missing]
        missing = [m for m in missing if m.startswith("CLAUDE_PLUGIN")]
        if missing:
            return None, unknown_note(missing, "its command") + "; not run"
        return ([command, *args] if self.args is not None else ["/bin/sh", "-c", command]), ""

    def environment(self) -> dict[str, str]:
        """What this hook adds to the environment every hook gets."""
        found = {"CLAUDE_PLUGIN_ROOT": self.plugin_root} if self.plugin_root else {}
        if self.plugin_data:
            found["CLAUDE_PLUGIN_DATA"] = self.plugin_data
        return found

    @property
    def label(self) -> str:
        """How the hook is named in messages: its command line, shortened."""
        text = " ".join([self.command, *(self.args or [])])
        return text if len(text) <= 80 else text[:77] + "..."


class HooksSettings(RootModel[dict[str, list[HookCommand]]]):
    root: dict[str, list[HookCommand]] = Field(default_factory=dict)

    def get(self, event: str) -> list[HookCommand]:
        return self.root.get(event, [])

    def __bool__(self) -> bool:
        return bool(self.root)

    def __eq__(self, other: object) -> bool:
        return self.root == other if isinstance(other, dict) else super().__eq__(other)


# Hooks run commands: a repository's apply one by one, as the person trusts them.
HOOKS = SettingsSection("hooks", HooksSettings, workspace_safe=False)
