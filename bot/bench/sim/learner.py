"""A simulated learner: who they are (a seeded `Profile`), what they remember (`Memory` per
card, bot.bench.sim.memory) and believe (misconceptions), and how they answer a served card.

Answering one served card:

1. Recall. The chance is the memory's R (or, for a card never met, the card's prior: what a
   learner already knows), times (1 - interference) while the learner holds a misconception
   that one of the card's wrong choices stands for. The first exposure of a study day moves
   the memory (recalled or a lapse); a same-day repeat (a drill) does not.
2. Hint. Not recalling, the learner asks for the hint with their own rate; recalling, a tenth
   of that (double-checking). A hint rules out one wrong choice per slot.
3. Attempts, up to 3. Recalling: the right answer at once. Otherwise per slot: a wrong choice
   that stands for a held misconception, else a uniform guess among the choices not yet ruled
   out (an elimination guesser: right by attempt 3 three times in four on 4 options). The
   feedback says which slots were wrong and explains each wrong choice's mistake; seeing that
   explanation drops a held misconception with probability ``fix_probability``.
4. Latency to the first answer: lognormal, median 9 s when recalled and 25 s when not, times
   the learner's speed, plus half as much again per extra slot, plus ~10 s for reading a
   hint; each retry takes ~8 s more.

Two worlds for the memory (``LearnerModel.world``, bot.bench.sim.worlds): "fsrs", FSRS-4.5's
model (the default), and "actr", ACT-R's activation with the spacing effect's decay.

Two models of a misconception (``LearnerModel.beliefs``):

- "static" (the default): held from the start or not at all, as above; an explanation drops
  it for good with ``fix_probability``.
- "memory" (issue 39.4): a belief shared by every card that tests the mistake, held from the
  start by some learners. It persists until addressed: seeing its explanation (after choosing
  its lure) starts a *correction*, a memory trace in the same world as the cards'. On every
  card that tests it the belief is active with the chance that the correction is not
  recalled (1 before any), so it comes back as the correction is forgotten; facing its lure
  while inactive is a recall of the correction (the trace grows), choosing it again shows the
  explanation again (a lapse, relearned).

``LearnerModel.remedies_teach`` off is the control for remediation: a remedy is answered and
takes its time, but the learner learns nothing from it (neither the card nor a correction).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import product
from random import Random

from bot.bench.sim.deck import DIFFICULTY_OFFSET, SimCard, Slot
from bot.bench.sim.worlds import WORLDS, MemoryTrace

__all__ = ["Answer", "LearnerModel", "Profile", "SimLearner"]

MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class LearnerModel:
    """The population's parameters (every one is reported with the run)."""

    ease_sigma: float = 0.35  # lognormal sigma of a learner's memory factor
    card_sigma: float = 0.3  # lognormal sigma of a card's memory factor (shared by learners)
    speed_sigma: float = 0.3  # lognormal sigma of a learner's latency factor
    prior: tuple[tuple[str, float], ...] = (("easy", 0.3), ("medium", 0.15), ("hard", 0.05))
    misconception_rate: float = 0.3  # each of the deck's mistakes is held with this chance
    fix_probability: float = 0.5  # a shown explanation drops the misconception
    interference: float = 0.3  # recall chance lost while a relevant misconception is held
    hint_rate: float = 0.25  # median chance of asking for the hint when not recalling
    hint_sigma: float = 0.5
    hint_when_recalled: float = 0.1  # relative to the learner's hint rate
    recalled_s: float = 9.0  # median latency (seconds) to a recalled first answer
    unsure_s: float = 25.0  # ... to a first answer without recall
    latency_sigma: float = 0.55
    hint_s: float = 10.0
    retry_s: float = 8.0
    per_extra_slot: float = 0.5
    world: str = "fsrs"  # the memory model: bot.bench.sim.worlds
    beliefs: str = "static"  # "static" or "memory": how a misconception is held (above)
    remedies_teach: bool = True  # False: the control, where a remedy teaches nothing

    def __post_init__(self) -> None:
        if self.world not in WORLDS:
            raise ValueError(f"world must be one of {sorted(WORLDS)}, got {self.world!r}")
        if self.beliefs not in ("static", "memory"):
            raise ValueError(f"beliefs must be static or memory, got {self.beliefs!r}")

    def prior_for(self, difficulty: str) -> float:
        return dict(self.prior)[difficulty]

    def as_dict(self) -> dict:
        data = {name: getattr(self, name) for name in self.__dataclass_fields__}
        data["prior"] = dict(self.prior)
        return data


@dataclass(frozen=True)
class Profile:
    index: int
    ease: float
    speed: float
    hint_rate: float
    misconceptions: frozenset[str]

    @classmethod
    def draw(cls, seed: int, index: int, mistake_ids: list[str],
             model: LearnerModel) -> Profile:
        rng = Random(f"{seed}/profile/{index}")
        ease = rng.lognormvariate(0, model.ease_sigma)
        speed = rng.lognormvariate(0, model.speed_sigma)
        hint = min(0.9, model.hint_rate * rng.lognormvariate(0, model.hint_sigma))
        held = frozenset(m for m in sorted(mistake_ids) if rng.random() < model.misconception_rate)
        return cls(index, ease, speed, hint, held)


def card_eases(seed: int, cards: list[SimCard], model: LearnerModel) -> dict[str, float]:
    """Each card's memory factor, shared by every learner."""
    return {c.id: Random(f"{seed}/card/{c.id}").lognormvariate(0, model.card_sigma)
            for c in cards}


@dataclass(frozen=True, slots=True)
class Answer:
    """What the learner did with one served card."""

    picks: tuple[tuple[str, ...], ...]  # one pick per slot, per attempt
    waits_ms: tuple[int, ...]  # per attempt: time since the serve (first) or the last attempt
    correct: bool
    hint_used: bool
    recalled: bool
    shown: tuple[str, ...]  # mistake ids whose explanations the feedback showed

    @property
    def attempts(self) -> int:
        return len(self.picks)

    @property
    def latency_ms(self) -> int:
        return self.waits_ms[0]

    @property
    def duration_ms(self) -> int:
        return sum(self.waits_ms)


@dataclass
class SimLearner:
    """One learner's state during one policy's run (fresh per policy, same profile)."""

    profile: Profile
    model: LearnerModel
    eases: dict[str, float]
    seed: int
    memory: dict[str, MemoryTrace] = field(default_factory=dict)
    held: set[str] = field(init=False)  # "static": the misconceptions still held
    corrections: dict[str, MemoryTrace] = field(default_factory=dict)  # "memory": per belief
    rng: Random = field(init=False)

    def __post_init__(self) -> None:
        self.held = set(self.profile.misconceptions)
        self.rng = Random(f"{self.seed}/answers/{self.profile.index}")

    @property
    def _beliefs(self) -> bool:
        return self.model.beliefs == "memory"

    # -- misconceptions -------------------------------------------------------------------

    def active_probability(self, mistake: str, at: float) -> float:
        """The chance that ``mistake`` draws the learner at ``at``: held or not ("static");
        for a belief ("memory"), that its correction is not recalled (1 before any)."""
        if not self._beliefs:
            return float(mistake in self.held)
        if mistake not in self.profile.misconceptions:
            return 0.0
        correction = self.corrections.get(mistake)
        return 1.0 if correction is None else 1.0 - correction.recall_probability(at)

    def misconceptions_held(self, at: float) -> float:
        """How many misconceptions draw the learner at ``at`` (expected, for beliefs)."""
        if not self._beliefs:
            return float(len(self.held))
        return sum(self.active_probability(m, at) for m in self.profile.misconceptions)

    def _active_now(self, card: SimCard, at: float) -> set[str]:
        """The misconceptions that draw the learner on this answer (beliefs drawn)."""
        if not self._beliefs:
            return self.held
        return {m for m in sorted(card.mistake_ids & self.profile.misconceptions)
                if self.rng.random() < self.active_probability(m, at)}

    def _correct(self, mistake: str, recalled: bool, at: float) -> None:
        """A correction's exposure: its first (the explanation), a recall or a relapse."""
        correction = self.corrections.get(mistake)
        if correction is None:
            world = WORLDS[self.model.world]
            self.corrections[mistake] = world.first(recalled, at, self.profile.ease, 0.0)
        else:
            correction.exposed(recalled, at)

    def _weighted_beliefs(self, card: SimCard, at: float):
        """(probability, active set) over the card's held beliefs."""
        tested = sorted(card.mistake_ids & self.profile.misconceptions) if self._beliefs else []
        chances = [self.active_probability(m, at) for m in tested]
        for states in product((False, True), repeat=len(tested)):
            weight = 1.0
            for chance, on in zip(chances, states, strict=True):
                weight *= chance if on else 1.0 - chance
            if weight > 0:
                yield weight, {m for m, on in zip(tested, states, strict=True) if on}

    # -- the memory model -------------------------------------------------------------

    def interfered(self, card: SimCard) -> bool:
        return not self.held.isdisjoint(card.mistake_ids)

    def _card_recall(self, card: SimCard, at: float) -> float:
        memory = self.memory.get(card.id)
        return (self.model.prior_for(card.difficulty) if memory is None
                else memory.recall_probability(at))

    def recall_probability(self, card: SimCard, at: float) -> float:
        r = self._card_recall(card, at)
        if self._beliefs:
            return sum(w * (r * (1 - self.model.interference) if active else r)
                       for w, active in self._weighted_beliefs(card, at))
        return r * (1 - self.model.interference) if self.interfered(card) else r

    def first_try_probability(self, card: SimCard, at: float) -> float:
        """P(right on the first try, no hint) at ``at``: recall, or a lucky guess (none
        while a misconception draws the guess to its wrong choice)."""
        if not self._beliefs:
            r = self.recall_probability(card, at)
            return r + (1 - r) * _guess(card, self.held)
        r = self._card_recall(card, at)
        total = 0.0
        for weight, active in self._weighted_beliefs(card, at):
            r_now = r * (1 - self.model.interference) if active else r
            total += weight * (r_now + (1 - r_now) * _guess(card, active))
        return total

    def lure_probability(self, card: SimCard, mistake: str, at: float) -> float | None:
        """P(the first pick, no hint, is a choice standing for ``mistake``), averaged over
        the card's slots that offer one (None when none does)."""
        slots = [slot for slot in card.slots if mistake in slot.mistakes.values()]
        if not slots:
            return None
        r = self._card_recall(card, at)
        total = 0.0
        for weight, active in self._weighted_beliefs(card, at):
            if not self._beliefs:
                active = self.held & card.mistake_ids
            r_now = r * (1 - self.model.interference) if active else r
            total += weight * (1 - r_now) * sum(_chosen(slot, mistake, active)
                                                for slot in slots) / len(slots)
        return total

    def _remember(self, card: SimCard, recalled: bool, at: float) -> None:
        memory = self.memory.get(card.id)
        if memory is None:
            ease = self.profile.ease * self.eases[card.id]
            world = WORLDS[self.model.world]
            self.memory[card.id] = world.first(recalled, at, ease,
                                               DIFFICULTY_OFFSET[card.difficulty])
        else:
            memory.exposed(recalled, at)

    # -- answering ----------------------------------------------------------------------

    def _latency(self, median_s: float) -> int:
        s = median_s * self.profile.speed * self.rng.lognormvariate(0, self.model.latency_sigma)
        return max(1, round(s * 1000))

    def answer(self, card: SimCard, at: float, remedy: bool = False) -> Answer:
        """Answer ``card`` served at ``at`` (days); moves memory and misconceptions (not
        for a ``remedy`` in the control, where remedies teach nothing)."""
        rng, model = self.rng, self.model
        teaches = model.remedies_teach or not remedy
        active = self._active_now(card, at)
        r = self._card_recall(card, at)
        if not active.isdisjoint(card.mistake_ids):
            r *= 1 - model.interference
        recalled = rng.random() < r
        if teaches:
            self._remember(card, recalled, at)
        rate = self.profile.hint_rate * (model.hint_when_recalled if recalled else 1.0)
        hint = rng.random() < rate
        ruled_out: list[set[str]] = [set() for _ in card.slots]
        if hint and not recalled:
            for slot, out in zip(card.slots, ruled_out, strict=True):
                out.add(rng.choice(sorted(slot.mistakes)))
        extra = 1 + model.per_extra_slot * (len(card.slots) - 1)
        first = self._latency((model.recalled_s if recalled else model.unsure_s) * extra)
        waits = [first + (self._latency(model.hint_s) if hint else 0)]
        done = [recalled] * len(card.slots)
        picks_made: list[tuple[str, ...]] = []
        shown: list[str] = []
        while True:
            picks = tuple(slot.answer if done[i] else self._pick(slot, ruled_out[i], active)
                          for i, slot in enumerate(card.slots))
            picks_made.append(picks)
            wrong = card.wrong(picks)
            if not wrong or len(picks_made) == 3:
                break
            wrong_slots = {i for i, _ in wrong}
            done = [i not in wrong_slots for i in range(len(card.slots))]
            for i, mistake in wrong:
                ruled_out[i].add(picks[i])
                shown.append(mistake)
                if teaches:
                    self._explained(mistake, at)
            waits.append(self._latency(model.retry_s))
        if wrong:  # the last attempt's explanations are shown as well
            for _, mistake in wrong:
                shown.append(mistake)
                if teaches:
                    self._explained(mistake, at)
        if teaches and self._beliefs:  # passed a lure by: the correction recalled
            for mistake in sorted(card.mistake_ids & self.corrections.keys()):
                if mistake not in active and mistake not in shown:
                    self.corrections[mistake].exposed(True, at)
        return Answer(tuple(picks_made), tuple(waits), not wrong, hint, recalled, tuple(shown))

    def _explained(self, mistake: str, at: float) -> None:
        """The feedback explained ``mistake``: a static one may drop, a belief is corrected
        (or its correction relearned)."""
        if self._beliefs:
            if mistake in self.profile.misconceptions:
                self._correct(mistake, False, at)
        elif mistake in self.held and self.rng.random() < self.model.fix_probability:
            self.held.discard(mistake)

    def _pick(self, slot: Slot, ruled_out: set[str], active: set[str]) -> str:
        lures = [c for c in slot.choices
                 if c not in ruled_out and slot.mistakes.get(c) in active]
        if lures:
            return self.rng.choice(lures)
        return self.rng.choice([c for c in slot.choices if c not in ruled_out])


def _guess(card: SimCard, active: set[str]) -> float:
    """P(a uniform first guess is right): none while a held lure draws the guess."""
    guess = 1.0
    for slot in card.slots:
        lure = any(m in active for m in slot.mistakes.values())
        guess *= 0.0 if lure else 1 / len(slot.choices)
    return guess


def _chosen(slot: Slot, mistake: str, active: set[str]) -> float:
    """P(a first guess in ``slot`` picks a choice standing for ``mistake``)."""
    lures = [c for c in slot.choices if slot.mistakes.get(c) in active]
    pool = lures or list(slot.choices)
    return sum(slot.mistakes.get(c) == mistake for c in pool) / len(pool)
