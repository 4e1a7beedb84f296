"""The behavioural checker of the code card gradient-accumulation/train-loop."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

from content.checkers.train_loop import MISTAKES, SCENARIOS, check  # noqa: E402
from tests.helpers.train_loop import REFERENCE  # noqa: E402

STEP_AND_CLEAR = """\
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
"""


def variant(*edits: tuple[str, str], base: str = REFERENCE) -> str:
    for old, new in edits:
        assert old in base, old
        base = base.replace(old, new)
    return base


CORRECT = {
    "reference": REFERENCE,
    "enumerate_start_1": """\
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for step, (x, y) in enumerate(dataloader, start=1):
        loss = criterion(model(x), y)
        (loss / accumulation_steps).backward()
        if step % accumulation_steps == 0 or step == len(dataloader):
            optimizer.step()
            optimizer.zero_grad()
""",
    "while_loop_counter_times_reciprocal_set_to_none": """\
for epoch in range(num_epochs):
    it = iter(dataloader)
    count = 0
    optimizer.zero_grad()
    while True:
        try:
            inputs, targets = next(it)
        except StopIteration:
            break
        count += 1
        loss = criterion(model(inputs), targets) * (1 / accumulation_steps)
        loss.backward()
        if count % accumulation_steps == 0 or count == len(dataloader):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
""",
    "one_epoch_loop_scaled_on_its_own_line": """\
optimizer.zero_grad(set_to_none=True)
for i, (inputs, labels) in enumerate(dataloader):
    outputs = model(inputs)
    loss = criterion(outputs, labels)
    loss = loss / accumulation_steps
    loss.backward()
    if (i + 1) % accumulation_steps == 0 or (i + 1) == len(dataloader):
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
""",
    "model_zero_grad_inplace_division": """\
for epoch in range(num_epochs):
    model.zero_grad()
    for i, (inputs, labels) in enumerate(dataloader):
        loss = criterion(model(inputs), labels)
        loss /= accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0 or i == len(dataloader) - 1:
            optimizer.step()
            model.zero_grad()
""",
    "separate_counter_flush_after_loop": """\
for epoch in range(num_epochs):
    n = 0
    for inputs, targets in dataloader:
        loss = criterion(model(inputs), targets) / accumulation_steps
        loss.backward()
        n += 1
        if n % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
    if n % accumulation_steps:
        optimizer.step()
        optimizer.zero_grad()
""",
    "indexing_clear_at_window_start": """\
for epoch in range(num_epochs):
    for i in range(len(dataloader)):
        inputs, labels = dataloader[i]
        if i % accumulation_steps == 0:
            optimizer.zero_grad()
        loss = criterion(model(inputs), labels) / accumulation_steps
        loss.backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
""",
    "partial_window_dropped_at_epoch_start": variant(
        (" or i + 1 == len(dataloader)", "")),
    "partial_window_scaled_by_its_size": """\
n = len(dataloader)
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (inputs, labels) in enumerate(dataloader):
        size = min(accumulation_steps, n - (i - i % accumulation_steps))
        loss = criterion(model(inputs), labels) / size
        loss.backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == n:
            optimizer.step()
            optimizer.zero_grad()
""",
    "grad_set_to_none_by_hand_and_reshaped_targets": """\
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        out = model(x.float()).squeeze(-1)
        (criterion(out, y.view(-1)) / accumulation_steps).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            optimizer.step()
            for p in model.parameters():
                p.grad = None
""",
}

BUGGY = {
    "no_loss_scaling": (variant((" / accumulation_steps\n", "\n")), ["no_loss_scaling"]),
    "divided_by_batch_size": (variant(("/ accumulation_steps", "/ batch_size")),
                              ["mismatched_scaling"]),
    "multiplied": (variant(("/ accumulation_steps", "* accumulation_steps")),
                   ["mismatched_scaling"]),
    "step_every_batch": (variant((STEP_AND_CLEAR, "        optimizer.step()\n" + STEP_AND_CLEAR
                                  .replace("            optimizer.step()\n", ""))),
                         ["step_every_batch"]),
    "plain_training": (variant((STEP_AND_CLEAR, "        optimizer.step()\n"
                                                "        optimizer.zero_grad()\n")),
                       ["step_every_batch"]),
    "off_by_one": (variant(("(i + 1) % accumulation_steps", "i % accumulation_steps")),
                   ["off_by_one_modulo"]),
    "off_by_one_without_flush": (variant(
        ("(i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader)",
         "i % accumulation_steps == 0")), ["off_by_one_modulo"]),
    "window_of_batch_size": (variant(("(i + 1) % accumulation_steps", "(i + 1) % batch_size")),
                             ["wrong_update_frequency"]),
    "window_of_num_epochs": (variant(("(i + 1) % accumulation_steps", "(i + 1) % num_epochs")),
                             ["wrong_update_frequency"]),
    "window_of_learning_rate": (variant(
        ("(i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader)",
         "(i + 1) % learning_rate == 0")), ["wrong_update_frequency"]),
    "zero_grad_every_batch": (variant(("        loss.backward()\n",
                                       "        optimizer.zero_grad()\n        loss.backward()\n")),
                              ["zero_grad_every_batch"]),
    "missing_zero_grad": (variant(("            optimizer.zero_grad()\n", "")),
                          ["missing_zero_grad"]),
    "missing_backward": (variant(("        loss.backward()\n", "")), ["missing_backward"]),
    "step_before_backward": (variant(("        loss.backward()\n" + STEP_AND_CLEAR,
                                      STEP_AND_CLEAR + "        loss.backward()\n")),
                             ["step_before_backward"]),
    "lr_divided_instead_of_loss": (variant(
        ("model.train()\n", "for group in optimizer.param_groups:\n"
                            "    group['lr'] = learning_rate / accumulation_steps  # A\n"),
        (" / accumulation_steps\n", "\n")), ["lr_scaled_instead_of_loss"]),
    "new_optimizer_with_larger_lr": (variant(
        ("model.train()\n", "import torch\noptimizer = torch.optim.SGD(model.parameters(), "
                            "lr=learning_rate * accumulation_steps)\n"),
        (" / accumulation_steps\n", "\n")), ["lr_scaled_instead_of_loss"]),
    "leftover_gradients": (variant(("    optimizer.zero_grad()\n    for i", "    for i"),
                                   (" or i + 1 == len(dataloader)", "")),
                           ["leftover_gradients"]),
    "hard_coded_4": (REFERENCE.replace("accumulation_steps", "4"),
                     ["mismatched_scaling", "wrong_update_frequency"]),
    "two_mistakes": (variant(("(i + 1) % accumulation_steps", "i % accumulation_steps"),
                             (" / accumulation_steps\n", "\n")),
                     ["no_loss_scaling", "off_by_one_modulo"]),
    # A fresh iterator for each update: every update trains on the first micro-batches.
    "iterator_per_update": ("""\
from itertools import islice
for epoch in range(num_epochs):
    for update in range(len(dataloader) // accumulation_steps):
        for x, y in islice(dataloader, accumulation_steps):
            (criterion(model(x), y) / accumulation_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""", ["restarted_iterator"]),
}


@pytest.mark.parametrize("name", CORRECT)
def test_correct_loops_pass(name):
    result = check(CORRECT[name])
    assert result == {"status": "ok", "passed": True, "mistakes": [], "feedback": [],
                      "error": None}


@pytest.mark.parametrize("name", BUGGY)
def test_buggy_loops_report_exactly_their_mistakes(name):
    code, expected = BUGGY[name]
    result = check(code)
    assert result["status"] == "ok" and result["error"] is None
    assert result["mistakes"] == expected
    assert len(result["feedback"]) == len(expected)
    assert result["passed"] is (expected == ["leftover_gradients"])


def test_every_mistake_id_is_covered():
    covered = {m for _, ids in BUGGY.values() for m in ids}
    # Clipping and schedulers: tests/checkers/test_checker_real_patterns.py; hooks:
    # tests/checkers/test_checker_hooks.py
    assert covered | {"clip_every_micro_batch", "scheduler_every_micro_batch",
                      "clip_in_grad_hook"} == set(MISTAKES)


def test_feedback_carries_the_numbers():
    def feedback(name):
        return " ".join(check(BUGGY[name][0])["feedback"])

    assert "4x too large" in feedback("no_loss_scaling")
    assert "after batches 1, 5, 9, 12 instead of 4, 8, 12" in feedback("off_by_one")
    assert "every 3 micro-batches" in feedback("window_of_batch_size")
    assert "learning rate 0.025 (learning_rate / 4)" in feedback("lr_divided_instead_of_loss")
    leftover = feedback("leftover_gradients")
    assert leftover.startswith("warning:") and "batch 10" in leftover
    assert "batches 1-4 again" in feedback("missing_zero_grad")


def test_leftover_gradients_also_from_a_one_epoch_loop_without_a_first_clear():
    seed_task_5 = """\
for batch_idx, (inputs, targets) in enumerate(dataloader):
    outputs = model(inputs)
    loss = criterion(outputs, targets) / accumulation_steps
    loss.backward()
    if (batch_idx + 1) % accumulation_steps == 0:
        optimizer.step()
        optimizer.zero_grad()
"""
    result = check(seed_task_5)
    assert result["passed"] and result["mistakes"] == ["leftover_gradients"]


def test_step_every_batch_without_any_clear_is_two_mistakes():
    code = variant((STEP_AND_CLEAR, "        optimizer.step()\n"))
    assert check(code)["mistakes"] == ["step_every_batch", "missing_zero_grad"]


@pytest.mark.parametrize("code, fragment", [
    ("import torch\noptimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)\n"
     + REFERENCE, "another optimizer"),
    (variant(("            optimizer.zero_grad()\n",
              "            optimizer.zero_grad()\n"
              "            import torch\n"
              "            with torch.no_grad():\n"
              "                model.bias += 0.01\n")), "changed outside optimizer.step()"),
    (variant(("criterion(outputs, labels)", "((outputs - labels) ** 2).mean()")),
     "criterion"),
    (variant(("            optimizer.step()\n",
              "            for p in model.parameters():\n"
              "                p.grad[0] += 1\n"
              "            optimizer.step()\n")), ".grad held values"),
    (variant(("            optimizer.step()\n", "            optimizer.step()\n"
                                               "            optimizer.step()\n")),
     "ran twice in a row"),
    (variant(("        loss.backward()\n", "        loss.backward(retain_graph=True)\n"
                                           "        loss.backward()\n")),
     "went through backward() 2 times"),
    (variant(("            optimizer.step()\n            optimizer.zero_grad()\n",
              "            optimizer.zero_grad()\n            optimizer.step()\n")),
     "applied nothing"),
    (REFERENCE.replace("range(num_epochs)", "range(2)"), "num_epochs = 4"),
])
def test_unexplained_behaviour_fails_without_an_id(code, fragment):
    result = check(code)
    assert result["status"] == "ok" and not result["passed"] and result["mistakes"] == []
    assert len(result["feedback"]) == 1 and fragment in result["feedback"][0]


def test_name_error_reports_the_learners_line():
    code = ("for inputs, labels in dataloader:\n"
            "    outputs = model(inputs)\n"
            "    loss = lossy(outputs, labels)\n")
    result = check(code)
    assert result["status"] == "error" and not result["passed"] and result["mistakes"] == []
    assert result["error"] == {"type": "NameError", "message": "name 'lossy' is not defined",
                               "line": 3}
    assert result["feedback"] == ["line 3: `NameError: name 'lossy' is not defined`"]


def test_syntax_error_reports_its_line():
    result = check("x = 1\nfor i in range(3)\n    pass\n")
    assert result["status"] == "error"
    assert result["error"]["type"] == "SyntaxError" and result["error"]["line"] == 2
    assert result["feedback"][0].startswith("line 2: `SyntaxError: ")


def test_error_raised_inside_torch_points_at_the_learners_call():
    result = check("x = 0\nfor inputs, labels in dataloader:\n    model(inputs.T)\n")
    assert result["status"] == "error"
    assert result["error"]["type"] == "RuntimeError" and result["error"]["line"] == 3


def test_checks_after_an_error_are_unaffected():
    check("for inputs, labels in dataloader:\n    raise ValueError('boom')\n")
    assert check(REFERENCE)["passed"]


def test_same_code_same_result():
    for code in (REFERENCE, BUGGY["missing_zero_grad"][0], BUGGY["leftover_gradients"][0]):
        assert check(code) == check(code)


def rename(code: str) -> str:
    names = {"epoch": "ep", "inputs": "xb", "labels": "yb", "outputs": "pred", "loss": "obj",
             "i": "k"}
    return re.sub(r"\b(" + "|".join(names) + r")\b", lambda m: names[m.group(1)], code)


@pytest.mark.parametrize("code", [REFERENCE, BUGGY["no_loss_scaling"][0],
                                  BUGGY["off_by_one"][0], BUGGY["step_before_backward"][0]])
def test_result_does_not_depend_on_variable_names(code):
    renamed = rename(code)
    assert renamed != code and "obj.backward()" in renamed
    assert check(renamed) == check(code)


def test_scenarios_tell_the_given_names_apart():
    for scn in SCENARIOS:
        others = {scn.batch_size, scn.num_epochs, scn.n_batches}
        assert scn.accumulation_steps not in others
    assert any(scn.partial for scn in SCENARIOS)
    assert any(not scn.partial for scn in SCENARIOS)
    assert len({scn.accumulation_steps for scn in SCENARIOS}) == len(SCENARIOS)


def test_checkers_package_does_not_import_torch():
    code = ("import sys, content.checkers as c, content.checkers.behaviour; "
            "assert 'torch' not in sys.modules; "
            "assert c.NAMES == ('train_loop', 'amp_clip_loop', 'behaviour')")
    subprocess.run([sys.executable, "-c", code], check=True)
