"""Held-out GPU programs for the catalogue's deleting entries (channels-last, zero-grad-none,
tensor-on-device, ddp-no-sync), each with its fix by hand, written before any prediction was read.

The programs, their fixes and this script were written before autoprof's analysis of any of
them was run. One command on one H100 (about 5 minutes; no timing round starts past
``--budget-s``) times each program and each fix WITHOUT the profiler (fresh processes, CUDA
events, interleaved rounds, medians: heldout_driver.py), records each program as written
once with ``@autoprof``, and leaves in OUT one small ``truth.json`` and the run folders as
``runs.tar.gz``:

    PYTHONPATH=.:/tmp/pylib AUTOPROF_CACHE=0 python benchmarks/gpu/heldout_deleting.py --out OUT

Afterwards, on any machine with the analysis (CPU is enough), the predictions beside the
truth (each fix: offered, its rank, predicted, interval, whether the measured gain lies in
it), into ``compare.json`` / ``compare.md`` under ``--into`` (default OUT):

    PYTHONPATH=. python benchmarks/gpu/heldout_deleting.py --out OUT --analyse [--into DIR]

``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way: a check that the programs and the pipeline run, not a measurement.

`ddp_accumulate` runs DDP as one rank on the one GPU (NCCL; gloo on the CPU): its all-reduce
is a one-rank NCCL call, so its gain is the reducer's and the launches', not a network's.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_oneshot  # noqa: E402
from heldout_driver import Case  # noqa: E402

CASES: dict[str, Case] = {
    "conv_bn_nchw": {
        "about": "a 6-layer conv/BatchNorm/ReLU net (64-128 channels, 32x32 images, batch 128) "
                 "trained with SGD in fp32 on NCHW tensors, cudnn.benchmark at its default "
                 "(off)",
        "setup": """
torch.backends.cudnn.benchmark = FIXED == 'channels_last_benchmark'
C, HW, B = (4, 8, 2) if DRY else (64, 32, 128)
def block(cin, cout):
    return [torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout),
            torch.nn.ReLU()]
net = torch.nn.Sequential(*block(3, C), *block(C, C), *block(C, 2 * C), *block(2 * C, 2 * C),
                          *block(2 * C, 2 * C), *block(2 * C, C), torch.nn.AdaptiveAvgPool2d(1),
                          torch.nn.Flatten(), torch.nn.Linear(C, 10)).to(DEVICE)
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(B, 3, HW, HW, device=DEVICE)
y = torch.randint(0, 10, (B,), device=DEVICE)
if FIXED is not None:
    net = net.to(memory_format=torch.channels_last)
    x = x.to(memory_format=torch.channels_last)
""",
        "base": """
opt.zero_grad()
torch.nn.functional.cross_entropy(net(x), y).backward()
opt.step()
""",
        "fixes": {
            "channels_last": {"about": "model and batch in torch.channels_last",
                              "match": ["channels-last", "channels_last"]},
            "channels_last_benchmark": {
                "about": "channels_last and torch.backends.cudnn.benchmark = True",
                "match": ["cudnn.benchmark"]},
        },
    },
    "zero_grad_false": {
        "about": "a 16-block residual MLP (width 512, LayerNorm and two Linear per block, "
                 "~100 parameter tensors, batch 64) trained with fused AdamW, its gradients "
                 "zeroed with zero_grad(set_to_none=False)",
        "setup": """
W, L, B = (16, 2, 4) if DRY else (512, 16, 64)
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(W)
        self.up = torch.nn.Linear(W, 2 * W)
        self.down = torch.nn.Linear(2 * W, W)
    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))
model = torch.nn.Sequential(*[Block() for _ in range(L)]).to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=CUDA)
x = torch.randn(B, W, device=DEVICE)
""",
        "base": """
opt.zero_grad(set_to_none=False)
model(x).square().mean().backward()
opt.step()
""",
        "fixes": {
            "set_to_none": {"about": "opt.zero_grad() (set_to_none=True)",
                            "code": """
opt.zero_grad()
model(x).square().mean().backward()
opt.step()
""",
                            "match": ["zero-grad-none", "set_to_none"]},
        },
    },
    "host_made_tensors": {
        "about": "a small token classifier's inference step (batch 16, 128 tokens, width 256) "
                 "that builds its position ids, padding mask and temperature on the host "
                 "each call and moves them to the GPU",
        "setup": """
V, T, W, B = (50, 8, 16, 2) if DRY else (8000, 128, 256, 16)
tok_emb = torch.nn.Embedding(V, W).to(DEVICE)
pos_emb = torch.nn.Embedding(T, W).to(DEVICE)
mix = torch.nn.Sequential(torch.nn.Linear(W, W), torch.nn.GELU(),
                          torch.nn.Linear(W, 10)).to(DEVICE)
tokens = torch.randint(0, V, (B, T), device=DEVICE)
POS = torch.arange(T, device=DEVICE)
KEEP = torch.ones(B, T, 1, device=DEVICE)
@torch.no_grad()
def classify(pos, keep, temperature):
    h = tok_emb(tokens) + pos_emb(pos)
    pooled = (mix(h) * keep).sum(1) / keep.sum(1)
    return (pooled / temperature).softmax(-1)
""",
        "base": """
pos = torch.arange(T).to(DEVICE)
keep = torch.ones(B, T, 1).to(DEVICE)
temperature = torch.tensor(0.7).to(DEVICE)
classify(pos, keep, temperature)
""",
        "fixes": {
            "on_device": {"about": "made on the device: torch.arange(T, device=...), "
                                   "torch.ones(..., device=...), the temperature a Python "
                                   "number",
                          "code": """
pos = torch.arange(T, device=DEVICE)
keep = torch.ones(B, T, 1, device=DEVICE)
classify(pos, keep, 0.7)
""",
                          "match": ["tensor-on-device", "device=x.device"]},
            "hoisted": {"about": "position ids and mask made once before the loop",
                        "code": "classify(POS, KEEP, 0.7)",
                        "match": ["tensor-on-device", "before the loop"]},
        },
    },
    "ddp_accumulate": {
        "about": "DDP (one rank on one GPU, NCCL) training an 8-layer MLP (width 1024) with "
                 "4 micro-batches of 32 accumulated per optimizer step, every backward "
                 "all-reducing (no no_sync)",
        "setup": """
import torch.distributed as dist
os.environ.setdefault('MASTER_ADDR', '127.0.0.1')
os.environ['MASTER_PORT'] = str(20000 + os.getpid() % 20000)
dist.init_process_group('nccl' if CUDA else 'gloo', rank=0, world_size=1)
W, L, B, K = (16, 2, 4, 2) if DRY else (1024, 8, 32, 4)
layers = []
for _ in range(L):
    layers += [torch.nn.Linear(W, W), torch.nn.ReLU()]
ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*layers).to(DEVICE))
opt = torch.optim.SGD(ddp.parameters(), lr=1e-3)
micro = [torch.randn(B, W, device=DEVICE) for _ in range(K)]
""",
        "base": """
opt.zero_grad()
for xb in micro:
    ddp(xb).square().mean().backward()
opt.step()
""",
        "fixes": {
            "no_sync": {"about": "with ddp.no_sync(): on every micro-step but the last",
                        "code": """
opt.zero_grad()
for xb in micro[:-1]:
    with ddp.no_sync():
        ddp(xb).square().mean().backward()
ddp(micro[-1]).square().mean().backward()
opt.step()
""",
                        "match": ["ddp-no-sync", "no_sync"]},
        },
    },
}

DEFAULTS = {"rounds": 5, "budget_s": 300.0, "record_calls": 20, "timeout_s": 90.0}
analyse = heldout_oneshot.analyse


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_oneshot.main(argv, (__doc__ or "").splitlines()[0], CASES, DEFAULTS)


if __name__ == "__main__":
    main()
