"""ketch_unfinished: an answer that did not finish is kept, and the model is told so.

It answers two kernel hooks. ``ketch_answer_cut_off``: an answer the output-token
limit cut off is not taken as finished; a notice tells the person, and a note asks
the model to continue from where it stopped (a tool call it was writing, which the
kernel never runs, in smaller pieces). ``ketch_turn_interrupted``: after the person
cancelled a turn, what the model had streamed of its answer stays in the history (the
person saw it), and a note says the turn was interrupted, so the next prompt is not
read as a second one in a row with no answer between. Without it
(``--no-plugin unfinished``) a cut-off answer ends the turn as it stands, and an
interrupted one leaves no trace but the cancelled calls' results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ketch.api import hookimpl

if TYPE_CHECKING:  # pragma: no cover
    from ketch.api import Message, Session

CUT_OFF_NOTE = (
    "[ketch] Your previous answer was cut off by the output-token limit{detail}. It is not "
    "finished. Continue from where it stopped; if you were writing a tool call, send it "
    "again in smaller pieces."
)
INTERRUPTED = (
    "[ketch] The user interrupted this turn{where}. Do not pick it up again unless they ask; "
    "their next message says what they want now."
)


@hookimpl
def ketch_answer_cut_off(session: Session, limit: int | None) -> str:
    from ketch.api import NoticeEvent

    session.kernel.emit(
        session,
        NoticeEvent(
            level="warning",
            message="the model's answer was cut off by the output-token limit; asking it to continue",
        ),
    )
    detail = f" ({limit} tokens)" if limit else ""
    return CUT_OFF_NOTE.format(detail=detail)


@hookimpl
def ketch_turn_interrupted(session: Session, partial: str) -> None:
    from ketch.api import Message

    if partial.strip():
        _append(session, Message.assistant(partial))
    transcript = session.transcript
    # Unless the last message already says so (a cancelled call's result).
    if transcript and transcript[-1].role != "tool":
        where = " while you were answering" if partial.strip() else ""
        _append(session, Message.user(INTERRUPTED.format(where=where), synthetic=True))


def _append(session: Session, message: Message) -> None:
    from ketch.api import MessageEvent

    session.append(message)
    session.kernel.emit(session, MessageEvent(message=message))
