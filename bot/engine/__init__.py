"""The tutor engine: which card next, is this answer right, what was the mistake, and
when to review again. Discord-free. This module is its one face: front ends (Discord, the
terminal, the web) import only from here (an import-linter contract holds them to it).

- `Engine` holds the services, built once by the composition root (`bot/app.py`) and
  handed to every front end: `tutor` (the core), `cards`, `plays`, `learners`,
  `servers`, `decks`, `boards`, `fits`, `reminder_sweep` (see `bot.engine.services`).
- The values they return: `Served` (a served card, its attempt state), `CardInPlay`,
  `Verdict` (the judgement, with the card and the learner's day), `Progress`,
  `CodeReport`, `Finding`, board and deck summaries, `Reminder`, `LearnerMistake`.
- The refusals they raise, all `TutorError`s, each a kind a front end words itself:
  `AlreadyCounted`, `Finished`, `Gone`, `NotYours`, `StaleCard`, `InvalidAnswer`,
  `RepeatedAnswer`, `TryAgain` (and `NotJudged`: our fault, nothing counted),
  `NeedsSandbox`, `DeckRejected`, `BadChoice`, `BadServerSetting`, `BadSetting`,
  `FitRefused`.
- Words shared by the front ends: `feedback_of` (what a verdict says), `card_text`,
  `when`, `counted` ("1 card", "2 cards"), ...; Discord's size limits (`DISCORD`), which
  uploads are measured by; `MAX_DECK_BYTES`, the most a deck file may hold.
- For the command line: `check_limits` (a deck file's limits), `exercises_of` (its behaviour
  cards) and `exercise_findings` (them tried, or `ExercisesUntried`), `report_from` (a
  sandbox result as a `CodeReport`).

Time is injected (`clock`), never read here. A served card is an immutable value that
carries its own attempt state, so a front end can keep it anywhere (memory, the store,
a Discord custom_id) and the engine holds nothing between calls.
"""

from bot.engine.boards import Activity, BadChoice, Board, Missed, Standing
from bot.engine.choice import SCHEDULERS, Choice
from bot.engine.code_judge import report_from
from bot.engine.community_decks import Checked, DeckRejected, DeckSummary, Draft, Uploaded
from bot.engine.deck_limits import DISCORD, MessageLimits, check_limits
from bot.engine.errors import (
    AlreadyCounted,
    Finished,
    Gone,
    InvalidAnswer,
    NeedsSandbox,
    NotJudged,
    NotYours,
    RepeatedAnswer,
    StaleCard,
    TryAgain,
    TutorError,
)
from bot.engine.exercises import ExercisesUntried, exercise_findings, exercises_of
from bot.engine.feedback import (
    KIND_LABEL,
    LETTERS,
    REPEATED,
    BlankState,
    Check,
    Feedback,
    answer_text,
    blank_states,
    card_text,
    feedback_of,
    first_sentence,
    has_code_options,
    lettered,
    numbered_code,
    reference_name,
    shown,
    tried_options,
    when,
)
from bot.engine.fits import FitDone, FitPanel, FitRefused, fit_lines
from bot.engine.judging import Finding, Response
from bot.engine.learners import RANGES, BadSetting
from bot.engine.misconceptions import LearnerMistake
from bot.engine.outcomes import FREE_RETRIES, CodeReport, Progress, Verdict
from bot.engine.reminders import DMClosed, Reminder, ReminderSweep, current_streak, reminder_hour
from bot.engine.served import Served, preview
from bot.engine.served_cards import CardInPlay
from bot.engine.servers import WEEKDAYS, BadServerSetting
from bot.engine.services import Engine
from bot.engine.tutor import CODE_POLICY, Mode
from bot.engine.wording import card_label, counted, topic_name
from content.untrusted import MAX_BYTES as MAX_DECK_BYTES
from scheduler.grading import MAX_ATTEMPTS
from scheduler.storage.models import Learner

__all__ = [
    "CODE_POLICY", "DISCORD", "FREE_RETRIES", "KIND_LABEL", "LETTERS", "MAX_ATTEMPTS",
    "MAX_DECK_BYTES", "RANGES", "REPEATED", "SCHEDULERS", "WEEKDAYS", "Activity",
    "AlreadyCounted", "BadChoice", "BadServerSetting", "BadSetting", "BlankState", "Board",
    "CardInPlay", "Check", "Checked", "Choice", "CodeReport", "DMClosed", "DeckRejected",
    "DeckSummary", "Draft", "Engine", "ExercisesUntried", "Feedback", "Finding", "Finished",
    "FitDone", "FitPanel", "FitRefused", "Gone", "InvalidAnswer", "Learner", "LearnerMistake",
    "MessageLimits", "Missed", "Mode", "NeedsSandbox", "NotJudged", "NotYours", "Progress",
    "Reminder", "ReminderSweep", "RepeatedAnswer", "Response", "Served", "StaleCard",
    "Standing", "TryAgain", "TutorError", "Uploaded", "Verdict", "answer_text", "blank_states",
    "card_label", "card_text", "check_limits", "counted", "current_streak", "exercise_findings",
    "exercises_of", "feedback_of", "first_sentence", "fit_lines", "has_code_options",
    "lettered", "numbered_code", "preview", "reference_name", "reminder_hour", "report_from",
    "shown", "topic_name", "tried_options", "when",
]
