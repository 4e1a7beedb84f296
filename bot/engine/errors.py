"""The kinds of refusal the engine raises. Each carries plain words that name no front end
(no command, no button): each front end words the way forward itself, by kind (the Discord
bot in `bot/discord_ui/refusals.py`, the terminal in `bot/terminal.py`)."""

from __future__ import annotations


class TutorError(Exception):
    """A problem the learner should be told about in plain words."""


class NeedsSandbox(TutorError):
    pass


class StaleCard(TutorError):
    pass


class TryAgain(TutorError):
    """Not judged now (the code runner is busy or rate-limited); no attempt was used."""


class NotJudged(TryAgain):
    """Our part failed (no code runner, a crash of ours, no answer in time): the answer was
    not judged, no attempt was used, nothing was recorded, and the card stays open.
    `cause`: a key of the sandbox's UNJUDGED causes, for the operator; `reason`: its words."""

    def __init__(self, message: str, cause: str, reason: str):
        super().__init__(message)
        self.cause, self.reason = cause, reason


class InvalidAnswer(TutorError):
    """The response is not a choice this card offers; no attempt was used."""


class RepeatedAnswer(InvalidAnswer):
    """The same wrong answer as an earlier attempt on this served card: it is known to be
    wrong, so it teaches nothing and costs no attempt."""

    def __init__(self, what: str, plural: bool = False):
        super().__init__(f"You already tried {what} on this card, and "
                         f"{'they are' if plural else 'it is'} not right: try something "
                         "else. This try used no attempt.")


class AlreadyCounted(TutorError):
    """Another click on this served card got there first; this one changed nothing."""


class Gone(TutorError):
    """No such served card (never served, or forgotten)."""

    def __init__(self, message: str = "This card is no longer available."):
        super().__init__(message)


class NotYours(TutorError):
    """The served card is another learner's."""

    def __init__(self, message: str = "This card was served to someone else."):
        super().__init__(message)


class Finished(TutorError):
    """The card was answered: the click changed nothing."""

    def __init__(self, message: str = "This card was already answered."):
        super().__init__(message)
