"""The AMP card's loops for the checker tests: the reference, correct variants written the
way real projects write them, and buggy ones with the mistake ids they must get."""

from __future__ import annotations

REFERENCE = """\
import torch
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (inputs, labels) in enumerate(dataloader):
        inputs, labels = inputs.to(device), labels.to(device)
        loss = criterion(model(inputs), labels) / accumulation_steps
        scaler.scale(loss).backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""
BACKWARD = "        scaler.scale(loss).backward()\n"
UNSCALE = "            scaler.unscale_(optimizer)\n"
CLIP = "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)\n"
STEP = "            scaler.step(optimizer)\n"
UPDATE = "            scaler.update()\n"
CLEAR = "            optimizer.zero_grad()\n"


def variant(*edits: tuple[str, str], base: str = REFERENCE) -> str:
    for old, new in edits:
        assert old in base, old
        base = base.replace(old, new)
    return base


def per_micro_batch(*lines: str) -> tuple[str, str]:
    """An edit that runs `lines` (window-level lines) right after each backward()."""
    return BACKWARD, BACKWARD + "".join(line[4:] for line in lines)


CORRECT = {
    "reference": REFERENCE,
    "partial_window_dropped_at_the_epoch_start": variant(
        (" or i + 1 == len(dataloader)", "")),
    "one_epoch_loop_set_to_none_clip_imported_by_name": """\
from torch.nn.utils import clip_grad_norm_
optimizer.zero_grad(set_to_none=True)
for step, (x, y) in enumerate(dataloader, start=1):
    scaler.scale(criterion(model(x), y) / accumulation_steps).backward()
    if step % accumulation_steps == 0 or step == len(dataloader):
        scaler.unscale_(optimizer)
        clip_grad_norm_(model.parameters(), max_norm=max_norm)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
""",
    "global_counter_straddling_epochs": """\
seen = 0
for epoch in range(num_epochs):
    for x, y in dataloader:
        seen += 1
        scaler.scale(criterion(model(x), y) / accumulation_steps).backward()
        if seen % accumulation_steps == 0:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
    "scaler_wrapper_with_an_update_flag": """\
class ScaledBackward:  # a scaler wrapper as timm's NativeScaler is written
    def __init__(self, scaler):
        self.scaler = scaler
    def __call__(self, loss, optimizer, clip, parameters, update):
        self.scaler.scale(loss).backward()
        if update:
            self.scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(parameters, clip)
            self.scaler.step(optimizer)
            self.scaler.update()
backward = ScaledBackward(scaler)
for epoch in range(num_epochs):
    optimizer.zero_grad()
    for i, (x, y) in enumerate(dataloader):
        last = (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader)
        backward(criterion(model(x), y) / accumulation_steps, optimizer, max_norm,
                 model.parameters(), last)
        if last:
            optimizer.zero_grad()
""",
    "cleared_at_the_window_start": """\
for epoch in range(num_epochs):
    for i, (x, y) in enumerate(dataloader):
        if i % accumulation_steps == 0:
            optimizer.zero_grad(set_to_none=False)
        scaled = scaler.scale(criterion(model(x), y) / accumulation_steps)
        scaled.backward()
        if (i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader):
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            scaler.step(optimizer)
            scaler.update()
""",
    # ConvNeXt's guard: the overflow is in the scaled gradient, the loss stays finite.
    "loss_guarded_by_an_assert": variant(
        ("import torch\n", "import math\nimport torch\n"),
        (BACKWARD, "        assert math.isfinite(loss.item()), f'Loss is {loss.item()}'\n"
                   + BACKWARD)),
    "forward_under_autocast": variant(
        ("        loss = criterion(model(inputs), labels) / accumulation_steps\n",
         "        with torch.autocast(device_type=device, dtype=torch.bfloat16):\n"
         "            loss = criterion(model(inputs), labels) / accumulation_steps\n")),
}

BUGGY = {
    "clip_before_unscale": (variant((UNSCALE, ""), (CLIP, CLIP + UNSCALE)),
                            ["clip_before_unscale"]),
    "clip_without_unscale": (variant((UNSCALE, "")), ["clip_before_unscale"]),
    "optimizer_step_without_update": (
        variant((UNSCALE, ""), (STEP, "            optimizer.step()\n"), (UPDATE, "")),
        ["optimizer_step_instead_of_scaler_step"]),
    "no_loss_scaling": (variant((" / accumulation_steps\n", "\n")), ["no_loss_scaling"]),
    "loss_divided_by_batch_size": (variant(("/ accumulation_steps\n", "/ len(labels)\n")),
                                   ["mismatched_scaling"]),
    "everything_every_micro_batch": (
        variant(per_micro_batch(UNSCALE, CLIP, STEP, UPDATE), (UNSCALE + CLIP + STEP + UPDATE,
                                                               "")),
        ["unscale_and_step_every_micro_batch"]),
    # The scaler's point defeated: each of these trains, and must fail.
    "unscale_clip_then_optimizer_step": (
        variant((STEP, "            optimizer.step()\n")),
        ["optimizer_step_instead_of_scaler_step"]),
    "grad_divided_by_hand_then_optimizer_step": (
        variant((UNSCALE, "            for p in model.parameters():\n"
                          "                p.grad /= scaler.get_scale()\n"),
                (STEP, "            optimizer.step()\n"), (UPDATE, "")),
        ["optimizer_step_instead_of_scaler_step"]),
    # The second scenario's overflow reaches the weights: no scaler skipped it.
    "no_scaler_at_all": (variant((BACKWARD, "        loss.backward()\n"), (UNSCALE, ""),
                                 (STEP, "            optimizer.step()\n"), (UPDATE, "")),
                         ["optimizer_step_instead_of_scaler_step", "backward_without_scaler"]),
    # It skips the overflow by hand (the skipped window is recognised, so only the step
    # that bypasses the scaler is told).
    "finite_check_by_hand_then_optimizer_step": (
        variant((CLIP, "            norm = " + CLIP.lstrip()),
                (STEP, "            if torch.isfinite(norm):\n"
                       "                optimizer.step()\n")),
        ["optimizer_step_instead_of_scaler_step"]),
    "scaled_loss_thrown_away": (
        variant((BACKWARD, "        scaler.scale(loss)\n        loss.backward()\n")),
        ["backward_without_scaler"]),
    "off_by_one": (variant(("(i + 1) % accumulation_steps == 0 or i + 1 == len(dataloader)",
                            "i % accumulation_steps == 0")), ["off_by_one_modulo"]),
    "window_of_three": (variant(("% accumulation_steps", "% 3")), ["wrong_update_frequency"]),
    "zero_grad_every_batch": (variant((BACKWARD, "        optimizer.zero_grad()\n" + BACKWARD)),
                              ["zero_grad_every_batch"]),
    "missing_zero_grad": (variant((CLEAR, "")), ["missing_zero_grad"]),
    "step_before_backward": (variant((BACKWARD, ""), (CLEAR, CLEAR + BACKWARD)),
                             ["step_before_backward"]),
    "clip_every_micro_batch": (variant(per_micro_batch(CLIP), (CLIP, "")),
                               ["clip_before_unscale", "clip_every_micro_batch"]),
    "clip_after_step": (variant((CLIP, ""), (UPDATE, UPDATE + CLIP)), ["clip_after_step"]),
    # The hook gets each micro-batch's scaled gradient: it clips before unscale_, per
    # micro-batch (the clip to max_norm then finds nothing left to clip).
    "clip_in_grad_hook": (
        variant(("import torch\n", "import torch\nfor p in model.parameters():\n    p."
                                   "register_hook(lambda g: g.clamp(-max_norm, max_norm))\n")),
        ["clip_in_grad_hook"]),
    "hard_coded_max_norm": (variant(("max_norm)\n", "1.0)\n")), ["wrong_clip_threshold"]),
    "a_wrong_clip_then_the_right_one": (
        variant((CLIP, CLIP.replace("max_norm)", "max_norm / 10)") + CLIP)),
        ["wrong_clip_threshold"]),
    "lr_divided_instead_of_loss": (
        variant((" / accumulation_steps\n", "\n"),
                ("import torch\n", "import torch\nfor g in optimizer.param_groups:\n"
                                   "    g['lr'] /= accumulation_steps\n")),
        ["lr_scaled_instead_of_loss"]),
    "scheduler_every_micro_batch": (
        variant(("import torch\n", "import torch\nscheduler = torch.optim.lr_scheduler."
                                   "LambdaLR(optimizer, lambda u: 0.9 ** u)\n"),
                per_micro_batch("            scheduler.step()\n")),
        ["scheduler_every_micro_batch"]),
    "leftover_gradients": (
        variant((" or i + 1 == len(dataloader)", ""), ("    optimizer.zero_grad()\n    for",
                                                       "    for")),
        ["leftover_gradients"]),
    "iterator_per_micro_batch": (
        variant(("    for i, (inputs, labels) in enumerate(dataloader):\n",
                 "    for i in range(len(dataloader)):\n"
                 "        inputs, labels = next(iter(dataloader))\n")),
        ["restarted_iterator"]),
}
