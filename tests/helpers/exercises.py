"""The example deck of behaviour cards (content/examples/pytorch-exercises.yaml) and
answers a learner might write for it: each labelled mistake made in other words than its
version, and a wrong answer per card that no version makes."""

from __future__ import annotations

from tests.helpers.paths import REPO

EXAMPLE = REPO / "content" / "examples" / "pytorch-exercises.yaml"
SOFTMAX, MASK, LOSS = ("pytorch-exercises/stable-softmax", "pytorch-exercises/causal-mask",
                       "pytorch-exercises/padded-token-loss")

# mistake id -> (card, a learner's code that makes it)
MISTAKEN = {
    "softmax_overflow": (SOFTMAX, """\
import torch
def softmax(x):
    return torch.exp(x) / torch.exp(x).sum(-1, keepdim=True)
"""),
    "softmax_wrong_axis": (SOFTMAX, """\
def softmax(x):
    e = (x - x.max()).exp()
    return e / e.sum(0)
"""),
    "mask_hides_diagonal": (MASK, """\
def mask_future(scores):
    hide = torch.triu(torch.ones(scores.shape[-2:])) == 1
    return scores.masked_fill(hide, float("-inf"))
"""),
    "mask_hides_past": (MASK, """\
def mask_future(scores):
    t = scores.shape[-1]
    return scores.masked_fill(torch.tril(torch.ones(t, t), -1).bool(), -float("inf"))
"""),
    "mask_fills_zero": (MASK, """\
def mask_future(scores):
    t = scores.shape[-1]
    return scores * torch.tril(torch.ones(t, t))
"""),
    "padding_counted": (LOSS, """\
import torch.nn.functional as F
def token_loss(logits, targets, pad_id):
    return F.cross_entropy(logits.transpose(1, 2), targets)
"""),
    "padding_in_denominator": (LOSS, """\
import torch.nn.functional as F
def token_loss(logits, targets, pad_id):
    losses = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    return losses.masked_fill(targets == pad_id, 0.0).mean()
"""),
    "mean_of_sequence_means": (LOSS, """\
import torch
import torch.nn.functional as F
def token_loss(logits, targets, pad_id):
    per_sequence = [F.cross_entropy(l[t != pad_id], t[t != pad_id])
                    for l, t in zip(logits, targets)]
    return torch.stack(per_sequence).mean()
"""),
}

# card -> a wrong answer no labelled version makes
UNLABELLED = {
    SOFTMAX: """\
def softmax(x):
    return (x - x.max(dim=-1, keepdim=True).values).exp()
""",
    MASK: """\
def mask_future(scores):
    t = scores.size(-1)
    return scores.masked_fill(torch.ones(t, t).triu(1).bool(), -1e9)
""",
    LOSS: """\
import torch.nn.functional as F
def token_loss(logits, targets, pad_id):
    return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=pad_id,
                           reduction="sum")
""",
}

# card -> a right answer in other words than the reference
RIGHT = {
    SOFTMAX: "import torch\ndef softmax(x):\n    return torch.softmax(x, dim=-1)\n",
    MASK: """\
def mask_future(scores):
    t = scores.size(-1)
    keep = torch.tril(torch.ones(t, t, dtype=torch.bool))
    return torch.where(keep, scores, torch.tensor(float("-inf")))
""",
    LOSS: """\
import torch.nn.functional as F
def token_loss(logits, targets, pad_id):
    losses = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    real = targets != pad_id
    return losses[real].sum() / real.sum()
""",
}

# A right answer with a typo: a NameError on every case, so no case returns.
MASK_TYPO = RIGHT[MASK].replace("keep, scores", "kept, scores")
