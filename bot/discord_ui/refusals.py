"""The engine's refusals in the Discord bot's words: the engine says what happened, in
words that name no front end; this module adds the way forward here (a command, a
button). Every refusal a learner or admin gets passes through `words`."""

from __future__ import annotations

from bot.engine import Finished, Gone, NotYours, StaleCard, TutorError

WAY_FORWARD: tuple[tuple[type[TutorError], str], ...] = (
    (Gone, "Use **/review** or **/learn** for a new one."),
    (NotYours, "Use **/review** to get your own."),
    (Finished, "Press **Next card** or use **/review**."),
    (StaleCard, "Press **Next card** for a fresh one."),
)


def words(error: TutorError) -> str:
    """What the learner reads: the engine's words, then what to do here."""
    for kind, then in WAY_FORWARD:
        if isinstance(error, kind):
            return f"{error} {then}"
    return str(error)
