"""Held-out CPU programs for the fix catalogue's CPU entries, each fixed by hand and timed.

One program per entry (`inference-mode`, `set-num-threads`, `compile-dynamic`), unlike the
programs of ``cpu_heldout.py`` and the tests' fixtures; the programs and their fixes were
written and committed before the entries' code was run on them. Timed and recorded by the
same driver as ``cpu_heldout.py`` (``gpu/heldout_driver.py``): fresh processes without the
profiler, program and fixes interleaved, medians over blocks and over rounds; each program
as written recorded once with ``@autoprof`` (its defaults) into ``OUT/runs/``.

    PYTHONPATH=. .venv/bin/python benchmarks/cpu_catalogue_heldout.py --out /tmp/cat
    PYTHONPATH=. .venv/bin/python benchmarks/cpu_catalogue_heldout.py --out /tmp/cat --compare
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "gpu"))

import heldout_cli  # noqa: E402
from heldout_driver import Case  # noqa: E402

CASES: dict[str, Case] = {
    "ranker_scoring_grad": {
        "about": "scoring 32 candidates with a residual MLP ranker (6 blocks of Linear 128, "
                 "LayerNorm, GELU) with autograd on and no backward",
        "setup": """
W = 32 if DRY else 128
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.norm = torch.nn.Linear(W, W), torch.nn.LayerNorm(W)
    def forward(self, h):
        return h + torch.nn.functional.gelu(self.norm(self.lin(h)))
ranker = torch.nn.Sequential(*[Block() for _ in range(6)], torch.nn.Linear(W, 1)).eval()
cands = torch.randn(32, W)
def score():
    return ranker(cands).squeeze(-1).topk(8).indices
def score_inference():
    with torch.inference_mode():
        return score()
def score_no_grad():
    with torch.no_grad():
        return score()
""",
        "base": "top = score()",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the scoring",
                               "code": "top = score_inference()",
                               "match": ["inference_mode", "inference-mode"]},
            "no_grad": {"about": "with torch.no_grad(): around the scoring",
                        "code": "top = score_no_grad()",
                        "match": ["no_grad"]},
        },
        "timing": {"warmup": 20, "blocks": 5, "iters": 50},
    },
    "small_cnn_default_threads": {
        "about": "a small CNN training step (two 3x3 convolutions, 16 images of 32x32) at "
                 "torch's default intra-op threads (one per core) on a machine other jobs load",
        "setup": """
if FIXED == 'threads_1':
    torch.set_num_threads(1)
C = 4 if DRY else 16
net = torch.nn.Sequential(torch.nn.Conv2d(3, C, 3, padding=1), torch.nn.ReLU(),
                          torch.nn.Conv2d(C, 2 * C, 3, padding=1), torch.nn.ReLU(),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                          torch.nn.Linear(2 * C, 10))
opt = torch.optim.SGD(net.parameters(), lr=1e-2, momentum=0.9)
images = torch.randn(4 if DRY else 16, 3, 32, 32)
labels = torch.randint(0, 10, (images.shape[0],))
""",
        "base": """
opt.zero_grad(set_to_none=True)
torch.nn.functional.cross_entropy(net(images), labels).backward()
opt.step()
""",
        "fixes": {
            "threads_1": {"about": "torch.set_num_threads(1)",
                          "match": ["set_num_threads", "set-num-threads"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 10},
    },
    "compile_batch_sizes": {
        "about": "torch.compile(dynamic=False) of a box-scoring head called on 5 different "
                 "numbers of boxes in turn: a compile for each new count",
        "setup": """
import torch._dynamo
torch._dynamo.config.cache_size_limit = 64
D = 16 if DRY else 96
head = torch.nn.Sequential(torch.nn.Linear(D, 2 * D), torch.nn.SiLU(), torch.nn.Linear(2 * D, 5))
def box_scores(feats):
    out = head(feats)
    return out[:, :4].sigmoid(), out[:, 4].softmax(0)
fn = torch.compile(box_scores, backend='aot_eager', dynamic=FIXED == 'dynamic')
counts = [40, 72, 104, 136, 168]
feats = [torch.randn(n, D) for n in counts]
state = {'i': 0}
""",
        "base": """
with torch.no_grad():
    fn(feats[state['i'] % len(feats)])
state['i'] += 1
""",
        "fixes": {
            "dynamic": {"about": "torch.compile(..., dynamic=True): one graph for every count",
                        "match": ["dynamic=true", "mark_dynamic", "compile-dynamic"]},
        },
        "timing": {"warmup": 0, "blocks": 1, "iters": 12},
    },
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_cli.main(argv, (__doc__ or "").splitlines()[0], CASES, "cpu",
                            {"rounds": 3, "budget_s": 600.0, "record_calls": 12})


if __name__ == "__main__":
    main()
