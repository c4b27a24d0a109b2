"""The storage question: asked once, after the model is set up, on a machine where the
session key has nowhere to go without the person (no OS keyring, nothing chosen yet).

The encryption plugin owns the question and the answer (its ``crypto_storage_question``
and ``crypto_set_up_storage`` hooks): the shell only shows the choices, with what each
protects against, reads a new passphrase (typed twice, nothing shown), and says what
was done. Without the plugin, nothing is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from prompt_toolkit.formatted_text import FormattedText

if TYPE_CHECKING:  # pragma: no cover
    from ketch_interactive.shell import Shell

NOT_NOW = "Not now: this session is not saved (asked again next time)"


async def ask_storage(shell: Shell) -> None:
    from ketch.api import KetchError
    from ketch_interactive.approval import (
        Interrupted,
        choose,
        fit_label,
        screen_size,
        wrap_lines,
    )

    kernel = shell.kernel
    if not hasattr(kernel.pm.hook, "crypto_storage_question"):
        return  # no encryption plugin: nothing to choose here
    question: Any = kernel.hooks.first("crypto_storage_question", kernel=kernel)
    if not question:
        return
    choices = list(question["choices"])
    columns = screen_size()[0]
    parts: list[tuple[str, str]] = [
        ("class:title", line + "\n") for line in wrap_lines(question["title"], columns - 2, "", "")
    ]
    for number, choice in enumerate(choices, 1):
        said = f"{number}. {choice['label']}: {choice['protects']}"
        parts += [("class:reason", x + "\n") for x in wrap_lines(said, columns - 2, "  ", "     ")]
    options: list[tuple[Any, str, str]] = [
        (c["id"], fit_label(c["label"], str(n), columns), str(n)) for n, c in enumerate(choices, 1)
    ]
    options.append((None, fit_label(NOT_NOW, "q", columns), "q"))
    try:
        picked = await choose(FormattedText(parts), options, cancel=None)
    except (Interrupted, EOFError):
        picked = None
    if picked is None:
        shell.renderer.line("· this session is not saved; ketch asks again next time", "dim")
        return
    shortest = int(question.get("passphrase_min_length") or 1)
    for _ in range(3):
        passphrase = await _new_passphrase(shell, shortest) if picked == "passphrase" else None
        if picked == "passphrase" and passphrase is None:
            shell.renderer.line("· no passphrase chosen: this session is not saved", "dim")
            return
        try:
            done = kernel.hooks.first(
                "crypto_set_up_storage", kernel=kernel, choice=picked, passphrase=passphrase
            )
        except KetchError as exc:
            shell.renderer.line(f"! {exc.message}", "yellow")
            continue
        if done:
            shell.renderer.line(f"✓ {done}", "green")
        return


async def _new_passphrase(shell: Shell, shortest: int) -> str | None:
    """Typed twice, nothing shown; None when the person gives up (an empty line)."""
    from ketch_interactive.approval import Interrupted
    from ketch_interactive.setup import _ask

    while True:
        try:
            first = await _ask(
                shell, "  New passphrase (nothing is shown; Enter alone: not now): ", secret=True
            )
            if not first:
                return None
            if len(first) < shortest:
                shell.renderer.line(
                    f"! a passphrase needs at least {shortest} characters; try again", "yellow"
                )
                continue
            second = await _ask(shell, "  Type it again: ", secret=True)
        except (Interrupted, EOFError):
            return None
        if first == second:
            return first
        shell.renderer.line("! the two did not match; try again", "yellow")
