"""The engine's core (`Tutor`): which card next, is this answer right, what was the
mistake, and when to review again. Front ends reach it through `bot.engine.Engine`.

Time is injected (`clock`), never read here. A served card is an immutable `Served` value
(`bot/engine/served.py`) that carries its own attempt state, so a front end can keep it anywhere
(memory, a Discord custom_id) and the engine stays stateless between calls.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import replace
from datetime import date, datetime

import sqlalchemy as sa

from bot.engine.deck_library import DeckAt, LiveLibrary
from bot.engine.errors import (
    AlreadyCounted,
    InvalidAnswer,
    NeedsSandbox,
    RepeatedAnswer,
    StaleCard,
)
from bot.engine.judging import (
    Finding,
    Response,
    judge_choice,
    judge_fill_in,
    mistakes_of,
)
from bot.engine.misconceptions import deck_tests, held_tests, tested_mistakes
from bot.engine.option_order import shuffled
from bot.engine.outcomes import (
    FREE_RETRIES,
    RETRY_CODE,
    RETRY_ERROR,
    CodeReport,
    Progress,
    Verdict,
)
from bot.engine.served import Kind, Served, new_serve_id
from bot.observability import record_answer
from content.loader import AnyCard, DeckLibrary
from content.schema import CodeCard, FillInCard
from scheduler.choice import DUE_KEYS, Choice, SchedulerName, fsrs_state, resolve
from scheduler.fsrs_review import FSRSState, review_fsrs, scheduler_with
from scheduler.grading import DEFAULT_POLICY, MAX_ATTEMPTS, GradePolicy, needs_drill, quality_for
from scheduler.next_card import MetCard, Mode, pick_next
from scheduler.remediation import REMEDIES_PER_DAY, Candidate, corrects, pick_remedies, remedy_day
from scheduler.sm2 import NEW, SM2State, review
from scheduler.storage.models import Learner
from scheduler.storage.store import Advance, ReviewRecord, ServedMoved, StaleReview, Store
from scheduler.studyday import due_day, study_day

# Writing a loop takes minutes, not seconds: a passing first submission within 5 minutes
# is a 5, within 15 a 4, slower a 3.
CODE_POLICY = GradePolicy(fast_ms=300_000, slow_ms=900_000)


class Tutor:
    def __init__(
        self,
        store: Store,
        library: DeckLibrary,
        *,
        clock: Callable[[], datetime],
        policy: GradePolicy = DEFAULT_POLICY,
        code_judge: Callable[[CodeCard, str, int], CodeReport] | None = None,
    ):
        self.store = store
        self.decks = LiveLibrary(store, library, clock)  # bundled files + stored decks
        self.clock = clock
        self.policy = policy
        self.code_judge = code_judge

    @property
    def library(self) -> DeckLibrary:
        return self.decks.library

    # -- learners ------------------------------------------------------------------------

    def learner(self, external_id: str, display_name: str = "") -> Learner:
        """The learner with this external id, created on first contact."""
        return self.store.learners.get_or_create(external_id, display_name=display_name,
                                                 now=self.clock())

    def known_learner(self, external_id: str) -> Learner | None:
        """The learner with this external id if they ever played; None creates nothing
        (a web visitor who only looks)."""
        return self.store.learners.find(external_id)

    def today(self, learner: Learner) -> date:
        return study_day(self.clock(), learner.timezone, learner.rollover_hour)

    def served_today(self, served: Served) -> date:
        """Today for the learner a card was served to, in the calendar it was served in
        (the one its review is recorded in)."""
        return study_day(self.clock(), served.timezone, served.rollover_hour)

    # -- choosing a card -----------------------------------------------------------------

    def servable(self, deck_id: str | None = None, topic: str | None = None,
                 decks: Collection[str] | None = None) -> list[AnyCard]:
        """Cards this tutor can judge (code cards only with a sandbox), in deck order;
        `decks` limits them to a server's enabled decks (default: the bundled ones, or
        `deck_id` when given)."""
        if decks is None and deck_id is None:
            decks = self.decks.bundled.decks
        # A judge can be away for a while (a fleet whose Redis does not answer).
        judges = self.code_judge is not None and getattr(self.code_judge, "available", True)
        return [
            card for card in self.library.cards(deck_id)
            if (judges or not isinstance(card, CodeCard))
            and (topic is None or topic in card.topics)
            and (decks is None or self.library.deck_of(card.id).id in decks)
        ]

    def choice(self, learner: Learner, guild_id: int | None = None,
               scheduler: str | None = None, remediation: bool | None = None) -> Choice:
        """The scheduler and remediation in force: a one-off choice (`tutor practice
        --scheduler --remediation`), else the learner's, else the server's, else ours."""
        server = self.store.servers.choice(learner.id, guild_id)
        return resolve(scheduler or learner.scheduler, server, remediation)

    def next_card(
        self,
        learner: Learner,
        *,
        deck_id: str | None = None,
        mode: Mode = "auto",
        topic: str | None = None,
        guild_id: int | None = None,
        only: str | None = None,
        decks: Collection[str] | None = None,
        scheduler: str | None = None,
        remediation: bool | None = None,
    ) -> Served | None:
        """The next card by scheduler/next_card.py's order (due reviews, new cards within
        the daily limit, remedies, rule-7 drills), with the scheduler and remediation in
        force. `practice` serves any card; `only` limits the choice to one card."""
        self.decks.refresh()  # another process may have changed a stored deck
        cards = {card.id: card for card in self.servable(deck_id, topic, decks)
                 if only is None or card.id == only}
        today = self.today(learner)
        choice = self.choice(learner, guild_id, scheduler, remediation)
        held = self.store.misconceptions.open_for(learner.id)  # (deck id, mistake id)
        states = {s.card_id: s for s in self.store.reviews.states(learner.id) if s.card_id in cards}
        due_of, risk_of = DUE_KEYS[choice.scheduler]
        met = {card_id: MetCard(due_of(s), risk_of(s),
                                # reviewed before the card's content changed: start over
                                s.card_rev < cards[card_id].meaning_rev,
                                s.last_review_day, s.last_reviewed_at, s.drill_pending,
                                s.remedy_day)
               for card_id, s in states.items()}
        unseen = [card_id for card_id in cards if card_id not in states]
        tests = held_tests(self.library, [cards[card_id] for card_id in unseen], held) \
            if choice.remediation else None
        pick = pick_next(met, unseen, today, mode=mode, remediation=choice.remediation,
                         new_left=lambda: self._new_left(learner, today),
                         tests=tests, open_mistakes={m for _, m in held})
        if pick is None:
            return None
        return self._serve(learner, cards[pick.card_id], pick.kind, states.get(pick.card_id),
                           guild_id=guild_id, choice=choice, held=held,
                           restart=pick.kind == "review" and met[pick.card_id].relearn)

    def _new_left(self, learner: Learner, today: date) -> int:
        return max(0, learner.new_per_day - self.store.reviews.new_cards_on(learner.id, today))

    def _serve(self, learner: Learner, card: AnyCard, kind: Kind, state: sa.Row | None, *,
               guild_id: int | None, choice: Choice, held: set[tuple[str, str]],
               restart: bool = False) -> Served:
        """`restart`: the learner's progress on this card starts over (its content
        changed); the row is still updated under its review-count guard. `held`: the
        learner's open misconceptions, as (deck id, mistake id)."""
        if guild_id is not None:
            self.store.servers.note_visit(guild_id, learner.id, self.clock())
        now = self.clock()
        serve_id = new_serve_id(now)
        fresh = state is None or restart
        deck_id = self.library.deck_of(card.id).id
        tested = tested_mistakes(card)
        on_card = sorted(m for d, m in held if d == deck_id and m in tested)
        return Served(
            serve_id=serve_id,
            learner_id=learner.id,
            card_id=card.id,
            card_rev=card.rev,
            kind=kind,
            served_at=now,
            state=NEW if fresh else SM2State(state.ef100, state.repetitions, state.interval),
            lapses=0 if fresh else state.lapses,
            review_count=None if state is None else state.review_count,
            guild_id=guild_id,
            timezone=learner.timezone,
            rollover_hour=learner.rollover_hour,
            order=shuffled(card, serve_id),
            fsrs=None if fresh else fsrs_state(state),
            scheduler=choice.scheduler,
            remediation=choice.remediation,
            restart=restart,
            fsrs_version=choice.fsrs_version,
            open_mistakes=tuple(on_card),
        )

    def card(self, served: Served) -> AnyCard:
        """The deck card a served card shows; StaleCard if it is gone or its meaning
        changed since it was served."""
        return self.decks.served_card(served.card_id, served.card_rev)[0]

    # -- answering -----------------------------------------------------------------------

    def hint(self, served: Served, *, stored: bool = False) -> tuple[Served, str]:
        """The card's hint; using it caps the grade at 2 (docs/architecture.md, grading).
        `stored`: written as `answer` writes an attempt (AlreadyCounted if it lost)."""
        card, deck = self.decks.served_card(served.card_id, served.card_rev)
        hinted = replace(served, hint_used=True)
        if stored and not self.store.served.advance(_advance(served, hinted, False, deck,
                                                             clear_draft=False)):
            raise AlreadyCounted("That click was already counted.")
        return hinted, card.hint

    def answer(self, served: Served, response: Response, *, stored: bool = False,
               report: CodeReport | None = None) -> Verdict:
        """Judge one attempt. `stored`: the served card is kept in the store (see
        `bot.engine.served_cards`), and its next attempt state is written with the review,
        in the same transaction, under a compare-and-set on its moves and on the version of
        the deck it was judged on; AlreadyCounted if that lost (another move got there
        first, or this process's library is behind the deck). `report`: a code answer's,
        judged already (`code_report`), recorded again after a lost write. The verdict
        carries what a front end shows: the card, and the learner's day in the calendar
        the card was served in (the one its review is recorded in)."""
        card, deck = self.decks.served_card(served.card_id, served.card_rev)
        return self._judge(served, card, deck, response, stored, report)

    def _judge(self, served: Served, card: AnyCard, deck: DeckAt, response: Response,
               stored: bool, report: CodeReport | None) -> Verdict:
        if served.attempts >= MAX_ATTEMPTS:
            raise StaleCard("This card was already answered.")
        if isinstance(card, CodeCard):
            return self._answer_code(served, card, response, stored, deck,
                                     report or self.code_report(card, response,
                                                                served.learner_id))
        if isinstance(card, FillInCard):
            chosen, findings = judge_fill_in(self.library, card, response)
        else:
            chosen, findings = judge_choice(self.library, card, response)
        if findings and chosen in served.chosen:  # known wrong: it would only cost an attempt
            raise RepeatedAnswer(*(("these picks", True) if isinstance(card, FillInCard)
                                   else ("that option",)))
        attempt = served.next_attempt(chosen)
        correct = not findings
        if not correct and attempt.attempts < MAX_ATTEMPTS:
            # A fill-in card's picks stay in the draft: only a wrong blank needs a new one.
            if stored and not self.store.served.advance(_advance(served, attempt, False, deck,
                                                                 clear_draft=False)):
                raise AlreadyCounted("That click was already counted.")
            return Verdict(attempt, False, False, findings, card=card,
                           today=self.served_today(attempt))
        verdict = self._finish(attempt, card, correct, findings,
                               advance=_advance(served, attempt, True, deck) if stored else None)
        return replace(verdict, earlier=self._earlier(card, served)) if served.chosen \
            else verdict

    def _earlier(self, card: AnyCard, served: Served) -> tuple[tuple[Finding, ...], ...]:
        """The mistakes of a served card's attempts so far, an attempt's each (one its deck
        no longer registers is left out)."""
        known = {m.id: m for m in self.library.deck_of(card.id).mistakes}
        return tuple(tuple(Finding("", "", m, known[m].title, known[m].explanation)
                           for m in mistakes_of(card, chosen) if m in known)
                     for chosen in served.chosen)

    def code_report(self, card: CodeCard, code: Response, learner_id: int) -> CodeReport:
        """What the sandbox and the card's checker say of a code answer (NotJudged when
        they could not say)."""
        if self.code_judge is None:
            raise NeedsSandbox("Code cards need the sandbox, which is not running here.")
        if not isinstance(code, str) or not code.strip():
            raise InvalidAnswer("Send your code: the training loop over `dataloader`.")
        return self.code_judge(card, code, learner_id)

    def _answer_code(self, served: Served, card: CodeCard, code: Response,
                     stored: bool, deck: DeckAt, report: CodeReport) -> Verdict:
        """One judged submission decides a code card: the checker's verdict, not a guess. A
        crash, timeout or refusal carries no mistake id; its report's feedback says what
        happened. Code that stopped before it trained (`CodeReport.ran_no_training`) is not
        judged: up to FREE_RETRIES times a card, it uses no attempt and may be sent again."""
        if report.ran_no_training and served.retries < FREE_RETRIES:
            retried = replace(served, retries=served.retries + 1,
                              retry_code=str(code)[:RETRY_CODE],
                              retry_error=(report.feedback or ("",))[0][:RETRY_ERROR])
            if stored and not self.store.served.advance(_advance(served, retried, False, deck)):
                raise AlreadyCounted("That code was already counted.")
            return Verdict(retried, False, False, (), report=report, retry=True, card=card,
                           today=self.served_today(retried))
        # An id the deck does not register (one stored before uploads had to register every
        # id its checker reports) is told by the checker's own feedback alone, and not kept.
        registered = {m.id: m for m in self.library.deck_of(card.id).mistakes}
        explained = [registered[m] for m in report.mistakes if m in registered]
        findings = [Finding("your code", "", m.id, m.title, m.explanation) for m in explained]
        # The free retries before it are logged with it; they lower no grade: a typo is
        # not a gap in the concept, and the latency policy already counts the time taken.
        attempt = served.next_attempt({"status": report.status,
                                       "mistakes": [m.id for m in explained],
                                       "retries": served.retries})
        verdict = self._finish(attempt, card, report.passed, tuple(findings), CODE_POLICY,
                               advance=_advance(served, attempt, True, deck) if stored else None)
        return replace(verdict, report=report)

    def _finish(self, served: Served, card: AnyCard, correct: bool,
                findings: tuple[Finding, ...], policy: GradePolicy | None = None,
                advance: Advance | None = None) -> Verdict:
        now = self.clock()
        today = study_day(now, served.timezone, served.rollover_hour)
        latency_ms = max(0, int((now - served.served_at).total_seconds() * 1000))
        quality = quality_for(correct, served.attempts, served.hint_used, latency_ms,
                              policy or self.policy)
        schedules = served.kind in ("new", "review")
        fsrs_before = self._fsrs_before(served)
        after, fsrs, told = served.state, served.fsrs, (served.state.interval, today)
        due, fsrs_due = today, None
        if schedules:  # both schedulers move; the one in force says when
            after = review(served.state, quality)
            due = due_day(today, after.interval)
            fsrs, fsrs_interval = review_fsrs(
                fsrs_before, quality, today,
                scheduler_with(self.store.fits.parameters(served.fsrs_version)))
            fsrs_due = due_day(today, fsrs_interval)
            told = (fsrs_interval, fsrs_due) if served.scheduler == SchedulerName.FSRS else (
                after.interval, due)
        lapses = served.lapses + (schedules and quality < 3)
        mistakes = sorted({m for attempt in served.chosen for m in mistakes_of(card, attempt)})
        deck_id = self.library.deck_of(card.id).id
        remedies = self._remedies(served, card, deck_id, mistakes, today) \
            if mistakes and served.remediation else ()
        record = ReviewRecord(
            answer_id=served.serve_id, learner_id=served.learner_id, card_id=card.id,
            deck_id=deck_id, card_rev=card.rev, kind=served.kind,
            reviewed_at=now, study_day=today, quality=quality, correct=correct,
            attempts=served.attempts, hint_used=served.hint_used, latency_ms=latency_ms,
            chosen=list(served.chosen), mistake_ids=mistakes,
            guild_id=served.guild_id, ef100=after.ef100, repetitions=after.repetitions,
            interval=after.interval, due_day=due, lapses=lapses,
            drill_pending=needs_drill(quality),
            expected_count=served.review_count, changes_schedule=schedules,
            told_interval=told[0], told_due_day=told[1], scheduler=served.scheduler,
            fsrs_stability=fsrs and fsrs.stability, fsrs_difficulty=fsrs and fsrs.difficulty,
            fsrs_due_day=fsrs_due, restart=served.restart, fsrs_version=served.fsrs_version,
            fsrs_stability_before=fsrs_before and fsrs_before.stability,
            fsrs_difficulty_before=fsrs_before and fsrs_before.difficulty,
            fsrs_last_day_before=fsrs_before and fsrs_before.last_day,
            corrected=tuple(sorted(corrects(frozenset(served.open_mistakes), correct,
                                            served.attempts, served.hint_used, mistakes))),
            remedies=tuple(remedies), remedy_day=remedy_day(today) if remedies else None,
        )
        try:
            recorded = self.store.record(record, advance)
        except StaleReview:
            raise StaleCard("This card was already answered elsewhere.") from None
        except ServedMoved:
            raise AlreadyCounted("That answer was already counted.") from None
        if not recorded.duplicate:
            record_answer(served.kind, recorded.correct)
        return Verdict(served, recorded.correct, True, findings, recorded.quality,
                       recorded.due_day, recorded.interval, recorded.duplicate, card=card,
                       today=today)

    def _fsrs_before(self, served: Served) -> FSRSState | None:
        """The FSRS state the review moves: the served card's, or for one served by a
        version that did not carry it (mid-upgrade), the stored one, not a fresh start."""
        if served.fsrs is not None or served.review_count is None or served.restart:
            return served.fsrs
        row = self.store.reviews.state(served.learner_id, served.card_id)
        return None if row is None else fsrs_state(row)

    def _remedies(self, served: Served, card: AnyCard, deck_id: str, mistakes: list[str],
                  today: date) -> list[str]:
        """The learner's cards to bring forward for the mistakes this answer showed."""
        budget = REMEDIES_PER_DAY - self.store.misconceptions.remedies_used(served.learner_id,
                                                                            today)
        if budget <= 0:
            return []
        tests = deck_tests(self.library, deck_id)
        due_of, _ = DUE_KEYS[served.scheduler]
        met = {s.card_id: Candidate(s.card_id, due_of(s), s.last_review_day,
                                    s.remedy_day is not None)
               for s in self.store.reviews.states(served.learner_id) if s.card_id in tests}
        return pick_remedies(mistakes, card.id, tests, met, today, budget)

    # -- progress ------------------------------------------------------------------------

    def progress(self, learner: Learner, deck_id: str | None = None,
                 guild_id: int | None = None, scheduler: str | None = None,
                 remediation: bool | None = None,
                 decks: Collection[str] | None = None) -> Progress:
        """The learner's standing on the cards `next_card` would serve them from the same
        arguments (`decks`: the decks they play here, `bot.engine.plays`)."""
        self.decks.refresh()
        today = self.today(learner)
        choice = self.choice(learner, guild_id, scheduler, remediation)
        due_of, _ = DUE_KEYS[choice.scheduler]
        cards = {card.id for card in self.servable(deck_id, decks=decks)}
        states = [s for s in self.store.reviews.states(learner.id) if s.card_id in cards]
        unseen = len(cards) - len(states)
        return Progress(
            cards=len(cards),
            seen=len(states),
            today=today,
            due_now=sum(due_of(s) <= today for s in states),
            new_left_today=min(unseen, self._new_left(learner, today)),
            drills_left=sum(s.drill_pending and s.last_review_day == today for s in states),
            next_due=min((due_of(s) for s in states if due_of(s) > today), default=None),
            choice=choice,
        )


def _advance(before: Served, after: Served, finished: bool, deck: DeckAt, *,
             clear_draft: bool = True) -> Advance:
    deck_id, version = deck or (None, 0)
    return Advance(before.serve_id, before.moves, after.to_json(), finished, clear_draft,
                   deck_id, version)
