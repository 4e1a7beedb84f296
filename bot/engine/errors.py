"""What the engine tells a learner went wrong, in plain words (front ends show the text)."""

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

    def __init__(self, what: str):
        super().__init__(f"You already tried {what} on this card, and it is not right: try "
                         "something else. This try used no attempt.")


class AlreadyCounted(TutorError):
    """Another click on this served card got there first; this one changed nothing."""
