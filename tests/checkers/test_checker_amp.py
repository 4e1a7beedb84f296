"""The behavioural checker of the code card gradient-accumulation/amp-clip-loop:
accumulation with AMP's GradScaler and gradient clipping, on the CPU."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytest.importorskip("torch")

from content.checkers._observe import observe  # noqa: E402
from content.checkers.amp_clip_loop import MISTAKES, SCENARIOS, check, judge, plan  # noqa: E402
from tests.helpers.amp_loops import (  # noqa: E402
    BACKWARD,
    BUGGY,
    CLEAR,
    CLIP,
    CORRECT,
    REFERENCE,
    STEP,
    UNSCALE,
    UPDATE,
    per_micro_batch,
    variant,
)

# Torch refuses some orders of the scaler's calls: the learner gets what it means here.
RAISING = {
    "no_update": (variant((UPDATE, "")), "missing_scaler_update",
                  "RuntimeError: unscale_() is being called after step()"),
    "no_update_no_unscale": (variant((UPDATE, ""), (UNSCALE, "")), "missing_scaler_update",
                             "step() has already been called since the last update()"),
    "unscale_every_micro_batch": (variant(per_micro_batch(UNSCALE), (UNSCALE, "")),
                                  "unscale_every_micro_batch", "already been called"),
    "unscale_and_clip_every_micro_batch": (
        variant(per_micro_batch(UNSCALE, CLIP), (UNSCALE + CLIP, "")),
        "unscale_every_micro_batch", "already been called"),
    "optimizer_step_then_update": (
        variant((UNSCALE, ""), (STEP, "            optimizer.step()\n")),
        "optimizer_step_instead_of_scaler_step", "No inf checks were recorded prior"),
    "scaler_step_every_micro_batch": (variant(per_micro_batch(STEP), (STEP, "")),
                                      "step_every_batch", "step() has already been called"),
    "scale_without_backward": (variant((BACKWARD, "        scaler.scale(loss)\n")),
                               "missing_backward", "No inf checks were recorded for"),
    "backward_without_the_scaler": (variant((BACKWARD, "        loss.backward()\n")),
                                    "backward_without_scaler", "did not use scaler.scale"),
}
RAISING_WITHOUT_ID = {
    "cleared_before_the_step": (variant((CLEAR, ""), (UNSCALE, CLEAR + UNSCALE)),
                                "cleared (zero_grad) before the step"),
    "update_every_micro_batch": (variant(per_micro_batch(UPDATE), (UPDATE, "")),
                                 "every micro-batch?"),
}
UNEXPLAINED = {
    "no_clipping": (variant((CLIP, "")), "no clip_grad_norm_ had clipped"),
    "clip_by_value": (variant(("clip_grad_norm_(model.parameters(), max_norm)",
                               "clip_grad_value_(model.parameters(), max_norm)")),
                      "clips the gradients' norm"),
    "clip_of_the_weight_only": (variant(("clip_grad_norm_(model.parameters(), max_norm)",
                                         "clip_grad_norm_(model.weight, max_norm)")),
                                "only some of the model's parameters"),
}


@pytest.mark.parametrize("name", CORRECT)
def test_correct_loops_pass(name):
    assert check(CORRECT[name]) == {"status": "ok", "passed": True, "mistakes": [],
                                    "feedback": [], "error": None}


@pytest.mark.parametrize("name", BUGGY)
def test_buggy_loops_report_exactly_their_mistakes(name):
    code, expected = BUGGY[name]
    result = check(code)
    assert result["status"] == "ok" and result["error"] is None
    assert result["mistakes"] == expected, result["feedback"]
    assert len(result["feedback"]) == len(expected)
    assert result["passed"] is (expected == ["leftover_gradients"])


@pytest.mark.parametrize("name", RAISING)
def test_refused_scaler_calls_report_their_mistake_in_plain_words(name):
    code, expected, torch_says = RAISING[name]
    result = check(code)
    assert result["status"] == "error" and not result["passed"]
    assert result["mistakes"] == [expected], result["feedback"]
    (feedback,) = result["feedback"]
    assert feedback.startswith("line ") and torch_says in feedback
    assert feedback.index(torch_says) > 40  # the plain words come first


@pytest.mark.parametrize("name", RAISING_WITHOUT_ID)
def test_other_refused_scaler_calls_are_explained_without_an_id(name):
    code, fragment = RAISING_WITHOUT_ID[name]
    result = check(code)
    assert result["status"] == "error" and result["mistakes"] == []
    assert fragment in result["feedback"][0]


@pytest.mark.parametrize("name", UNEXPLAINED)
def test_wrong_clipping_or_no_scaler_fails_without_an_id(name):
    code, fragment = UNEXPLAINED[name]
    result = check(code)
    assert result["status"] == "ok" and not result["passed"] and result["mistakes"] == []
    assert len(result["feedback"]) == 1 and fragment in result["feedback"][0]


def test_every_mistake_id_is_covered():
    covered = {m for _, ids in BUGGY.values() for m in ids} | {
        m for _, m, _ in RAISING.values()}
    assert covered == set(MISTAKES)


def test_feedback_carries_the_numbers():
    clip_first = check(BUGGY["clip_before_unscale"][0])["feedback"][0]
    assert "loss scale (65536)" in clip_first and "max_norm = 0.5" in clip_first
    assert "7.63e-06" in clip_first  # 0.5 / 65536: the limit on the real gradients
    direct = check(BUGGY["optimizer_step_without_update"][0])["feedback"][0]
    assert "65536x too large" in direct and "after batch 4 (epoch 1)" in direct
    every = check(BUGGY["everything_every_micro_batch"][0])["feedback"][0]
    assert "divided all of .grad by the scale (65536)" in every
    assert "own micro-batch's gradient / accumulation_steps" in every and "4x too small" in every
    unscaled = check(variant((" / accumulation_steps\n", "\n"),
                             base=BUGGY["everything_every_micro_batch"][0]))
    assert unscaled["mistakes"] == ["unscale_and_step_every_micro_batch"]
    assert "multiplied by 1: small-batch training" in unscaled["feedback"][0]  # no k to blame
    thrown = check(BUGGY["scaled_loss_thrown_away"][0])["feedback"][0]
    assert "multiplied by 0.25, not by the scaler's scale (65536)" in thrown
    assert "multiplied by 3.81e-06 instead of 1/4" in thrown


def test_a_wrong_threshold_is_told_what_its_clips_did():
    """Every clip of an update counts: a tighter clip before the one to max_norm decides the
    norm, and the learner is told why the last clip did not."""
    (twice,) = check(BUGGY["a_wrong_clip_then_the_right_one"][0])["feedback"]
    assert "ran 2 times on one update's gradient" in twice
    assert "where max_norm = 0.5 allows 0.5" in twice and "left it there" in twice
    (hard,) = check(BUGGY["hard_coded_max_norm"][0])["feedback"]
    assert "where max_norm = 0.5 allows 0.5" in hard and "another threshold" in hard
    looser_then_right = variant((CLIP, CLIP.replace("max_norm)", "max_norm * 10)") + CLIP))
    assert check(looser_then_right)["passed"]  # the update's norm is max_norm's


def test_a_crash_gets_a_plain_message_with_the_learners_line():
    result = check(variant(("max_norm)\n", "max_nrm)\n")))
    assert result["status"] == "error" and result["mistakes"] == []
    assert result["feedback"] == ["line 10: `NameError: name 'max_nrm' is not defined`"]
    syntax = check("for x in dataloader\n    pass\n")
    assert syntax["status"] == "error" and syntax["feedback"][0].startswith("line 1: ")


def test_scenarios_tell_the_given_names_apart():
    for scn in SCENARIOS:
        assert scn.accumulation_steps not in {scn.batch_size, scn.num_epochs, scn.n_batches}
    assert len({scn.max_norm for scn in SCENARIOS}) == len(SCENARIOS)
    assert len({scn.init_scale for scn in SCENARIOS}) == len(SCENARIOS)
    assert any(scn.partial for scn in SCENARIOS) and any(not scn.partial for scn in SCENARIOS)
    # The scale changes during one scenario: it is not a constant to divide by.
    assert any(scn.growth_interval < scn.n_batches for scn in SCENARIOS)


def test_the_scaler_really_scales_clipping_bites_and_one_window_overflows():
    from content.checkers._trace import Clip, ScalerCall, Step, replay

    observed = observe(REFERENCE, plan())
    for scn, data, obs in zip(SCENARIOS, plan(), observed["scenarios"], strict=True):
        trace = replay(scn, data, obs)
        scales = [e.scale for e in trace.events if isinstance(e, ScalerCall)]
        norms = [e.norms[0] for e in trace.events if isinstance(e, Clip)]
        assert any(n > scn.max_norm for n in norms) and any(n < scn.max_norm for n in norms)
        skipped = [e for e in trace.events if isinstance(e, Step) and e.skipped]
        if scn.overflow_batch is None:
            assert min(scales) >= scn.init_scale > 1 and not skipped
        else:  # once per epoch scaler.step() skipped the update, and the scale backed off
            assert [s.epoch for s in skipped] == list(range(1, scn.num_epochs + 1))
            assert scn.init_scale / 2 in scales and trace.nonfinite is None
    assert any(scn.overflow_batch is not None for scn in SCENARIOS)


def test_same_code_same_result():
    for code in (REFERENCE, BUGGY["clip_before_unscale"][0], RAISING["no_update"][0]):
        assert check(code) == check(code)


def test_the_watch_on_torch_ends_with_the_check():
    import torch

    scaler = torch.amp.GradScaler
    originals = [scaler.__dict__[m] for m in ("scale", "unscale_", "step", "update")]
    check(REFERENCE)
    check(RAISING["no_update"][0])
    assert [scaler.__dict__[m] for m in ("scale", "unscale_", "step", "update")] == originals


@pytest.mark.parametrize("event", [["G", "rescale", 1.0], ["G", "step"], ["G", "step", "x"]])
def test_malformed_scaler_events_are_refused(event):
    from content.checkers._trace import Malformed

    observed = observe(REFERENCE, plan())
    observed["scenarios"][0]["events"].insert(0, event)
    with pytest.raises(Malformed):
        judge(observed)


def test_the_deck_card_uses_this_checker():
    from content.loader import DECKS_DIR, load_deck
    from content.schema import CodeCard

    card = load_deck(DECKS_DIR / "gradient-accumulation.yaml").card(
        "gradient-accumulation/amp-clip-loop")
    assert isinstance(card, CodeCard) and card.checker == "amp_clip_loop"
    assert sorted(card.mistakes) == sorted(MISTAKES)
    assert {"scaler", "max_norm"} <= set(card.given_names)
    assert check(card.reference)["passed"] and check(card.reference)["mistakes"] == []


def test_the_judge_does_not_import_torch():
    code = ("import sys, content.checkers as c; c.load('amp_clip_loop'); "
            "assert 'torch' not in sys.modules; assert 'amp_clip_loop' in c.NAMES; "
            "assert c.OBSERVERS['amp_clip_loop'] == 'content.checkers._observe'")
    subprocess.run([sys.executable, "-c", code], check=True)
