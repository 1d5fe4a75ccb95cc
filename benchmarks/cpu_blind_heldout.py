"""Blind held-out CPU programs: six common CPU bugs written without reading autoprof's analysis.

The programs and their fixes were written by an author who had not read how autoprof analyses
a run: a GRU session recommender scored with autograd on, a sensor-window Dataset doing numpy
work per sample read with no workers, a compiled point-cloud encoder fed scenes of varying
size under `dynamic=False`, a keypoint regressor whose loss loops over the batch in Python, a
deep narrow tabular network trained with `Adam(foreach=False)`, and a small NCHW denoising CNN
trained in float32. Timed and recorded by the same driver as ``cpu_heldout.py``
(``gpu/heldout_driver.py``): fresh processes without the profiler, program and fixes
interleaved, medians over blocks and over rounds; each program as written recorded once with
``@autoprof`` (its defaults) into ``OUT/runs/``.

    PYTHONPATH=. .venv/bin/python benchmarks/cpu_blind_heldout.py --out /tmp/cpu_blind
    PYTHONPATH=. .venv/bin/python benchmarks/cpu_blind_heldout.py --out /tmp/cpu_blind --compare
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "gpu"))

import heldout_cli  # noqa: E402
from heldout_driver import Case  # noqa: E402

CASES: dict[str, Case] = {
    "gru_session_recommender_grad": {
        "about": "scoring the next item for 32 browsing sessions of 20 clicks with a GRU "
                 "recommender (item embedding 64, GRU 128, 2000-item head, top 10) in eval "
                 "mode with autograd on",
        "setup": """
ITEMS, E, H = (200, 16, 32) if DRY else (2000, 64, 128)
class SessionRec(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(ITEMS, E, padding_idx=0)
        self.gru = torch.nn.GRU(E, H, batch_first=True)
        self.out = torch.nn.Linear(H, ITEMS)
    def forward(self, clicks):
        _, h = self.gru(self.emb(clicks))
        return self.out(h[-1])
rec = SessionRec().eval()
sessions = torch.randint(1, ITEMS, (32, 20))
def recommend():
    scores = rec(sessions)
    scores[:, 0] = float('-inf')
    return scores.topk(10, dim=1).indices
def recommend_inference():
    with torch.inference_mode():
        return recommend()
def recommend_no_grad():
    with torch.no_grad():
        return recommend()
""",
        "base": "top = recommend()",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the scoring",
                               "code": "top = recommend_inference()",
                               "match": ["inference-mode", "inference_mode"]},
            "no_grad": {"about": "with torch.no_grad(): around the scoring",
                        "code": "top = recommend_no_grad()",
                        "match": ["inference-mode", "no_grad"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 20},
    },
    "sensor_windows_loader": {
        "about": "a DataLoader over sliding windows (128 steps x 6 channels) of a long "
                 "accelerometer recording, each window z-normalised, differenced and labelled "
                 "with numpy in __getitem__, batch 128, num_workers=0, feeding a 1-D CNN step",
        "setup": """
import numpy as np
from torch.utils.data import DataLoader, Dataset
rng = np.random.default_rng(1)
T, C, WIN, STRIDE = (4000, 6, 32, 8) if DRY else (400000, 6, 128, 16)
signal = rng.standard_normal((T, C)).astype(np.float32).cumsum(0) * 0.01
activity = rng.integers(0, 5, T)
COUNT = (T - WIN) // STRIDE
class Windows(Dataset):
    def __len__(self):
        return COUNT
    def __getitem__(self, i):
        s = i * STRIDE
        w = signal[s:s + WIN]
        w = (w - w.mean(0)) / (w.std(0) + 1e-6)
        d = np.diff(w, axis=0, prepend=w[:1])
        x = np.concatenate([w, d], axis=1).T.copy()
        y = int(np.bincount(activity[s:s + WIN], minlength=5).argmax())
        return torch.from_numpy(x), y
class BatchedWindows(Windows):
    def __getitems__(self, idx):
        starts = np.asarray(idx) * STRIDE
        w = signal[starts[:, None] + np.arange(WIN)]
        w = (w - w.mean(1, keepdims=True)) / (w.std(1, keepdims=True) + 1e-6)
        d = np.diff(w, axis=1, prepend=w[:, :1])
        x = np.ascontiguousarray(np.concatenate([w, d], axis=2).transpose(0, 2, 1))
        acts = activity[starts[:, None] + np.arange(WIN)]
        counts = (acts[:, :, None] == np.arange(5)).sum(1)
        return torch.from_numpy(x), torch.from_numpy(counts.argmax(1))
def _whole(batch):
    return batch
batched = FIXED == 'getitems'
workers = 2 if FIXED == 'workers_2' and not DRY else 0
loader = DataLoader(BatchedWindows() if batched else Windows(), batch_size=16 if DRY else 128,
                    shuffle=True, num_workers=workers, persistent_workers=workers > 0,
                    **(dict(collate_fn=_whole) if batched else {}))
cnn = torch.nn.Sequential(torch.nn.Conv1d(2 * C, 16, 5, padding=2), torch.nn.ReLU(),
                          torch.nn.Conv1d(16, 16, 5, padding=2, stride=2), torch.nn.ReLU(),
                          torch.nn.AdaptiveMaxPool1d(1), torch.nn.Flatten(),
                          torch.nn.Linear(16, 5))
opt = torch.optim.Adam(cnn.parameters(), lr=1e-3)
state = {}
def next_batch():
    if 'it' not in state:
        state['it'] = iter(loader)
    try:
        return next(state['it'])
    except StopIteration:
        state['it'] = iter(loader)
        return next(state['it'])
""",
        "base": """
x, y = next_batch()
opt.zero_grad()
torch.nn.functional.cross_entropy(cnn(x), y).backward()
opt.step()
""",
        "fixes": {
            "getitems": {"about": "Windows.__getitems__ that gathers, normalises and labels "
                                  "the whole batch with one numpy op each",
                         "match": ["batched-dataset", "__getitems__", "batchsampler"]},
            "workers_2": {"about": "DataLoader(num_workers=2, persistent_workers=True)",
                          "match": ["loader-workers", "num_workers"]},
        },
        "timing": {"warmup": 3, "blocks": 3, "iters": 8},
    },
    "pointcloud_compile_static": {
        "about": "torch.compile(dynamic=False) of a PointNet-style encoder (shared MLP "
                 "3-64-128, max pool, 8 classes) called on scenes of 10 different point "
                 "counts in turn, each 3 times",
        "setup": """
import torch._dynamo
torch._dynamo.config.cache_size_limit = 64
F = 16 if DRY else 64
class PointNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = torch.nn.Sequential(torch.nn.Linear(3, F), torch.nn.ReLU(),
                                       torch.nn.Linear(F, 2 * F), torch.nn.ReLU())
        self.cls = torch.nn.Linear(2 * F, 8)
    def forward(self, pts):
        centred = pts - pts.mean(1, keepdim=True)
        return self.cls(self.mlp(centred).amax(1)).log_softmax(-1)
net = PointNet().eval()
encode = torch.compile(net, backend='aot_eager', dynamic=FIXED == 'dynamic')
counts = [500, 640, 730, 880, 1020, 1170, 1310, 1480, 1650, 2048]
scenes = [torch.randn(4, n, 3) for n in counts]
state = {'i': 0}
def next_scene():
    pts = scenes[state['i'] % len(scenes)]
    state['i'] += 1
    if FIXED == 'mark_dynamic':
        torch._dynamo.mark_dynamic(pts, 1)
    return pts
""",
        "base": """
with torch.no_grad():
    logp = encode(next_scene())
""",
        "fixes": {
            "dynamic": {"about": "torch.compile(..., dynamic=True): one graph for every count",
                        "match": ["compile-dynamic", "dynamic=true"]},
            "mark_dynamic": {"about": "torch._dynamo.mark_dynamic(points, 1) on each scene",
                             "match": ["compile-dynamic", "mark_dynamic"]},
        },
        "timing": {"warmup": 0, "blocks": 1, "iters": 30},
    },
    "keypoint_loss_loop": {
        "about": "a facial keypoint regressor training step (MLP 256-256-34 over 32 feature "
                 "vectors) whose visibility-masked smooth-L1 loss loops over the batch in "
                 "Python, one sample at a time",
        "setup": """
B, K = (8, 5) if DRY else (32, 17)
reg = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(),
                          torch.nn.Linear(256, 2 * K))
opt = torch.optim.SGD(reg.parameters(), lr=1e-3, momentum=0.9)
feats = torch.randn(B, 256)
target = torch.rand(B, K, 2)
visible = torch.rand(B, K) > 0.2
def loss_loop(pred):
    pred = pred.view(B, K, 2)
    total, seen = pred.new_zeros(()), 0
    for i in range(B):
        for k in range(K):
            if visible[i, k]:
                total = total + torch.nn.functional.smooth_l1_loss(pred[i, k], target[i, k])
                seen += 1
    return total / max(seen, 1)
def loss_vectorised(pred):
    per = torch.nn.functional.smooth_l1_loss(pred.view(B, K, 2), target, reduction='none')
    per = per.mean(-1)
    return (per * visible).sum() / visible.sum().clamp(min=1)
loss_fn = loss_vectorised if FIXED == 'vectorised' else loss_loop
""",
        "base": """
opt.zero_grad(set_to_none=True)
loss_fn(reg(feats)).backward()
opt.step()
""",
        "fixes": {
            "vectorised": {"about": "the masked loss over the whole batch: smooth_l1_loss("
                                    "reduction='none') times the visibility mask",
                           "match": ["vectorise", "loop"]},
        },
        "timing": {"warmup": 2, "blocks": 3, "iters": 4},
    },
    "narrow_resmlp_adam_loop": {
        "about": "a tabular regression step of a 32-block narrow residual MLP (width 48, "
                 "BatchNorm1d, 132 small parameters) trained with Adam(foreach=False) on "
                 "batches of 64 rows",
        "setup": """
D, DEPTH = (16, 4) if DRY else (48, 32)
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin, self.bn = torch.nn.Linear(D, D), torch.nn.BatchNorm1d(D)
    def forward(self, h):
        return h + torch.relu(self.bn(self.lin(h)))
model = torch.nn.Sequential(torch.nn.Linear(20, D), *[Block() for _ in range(DEPTH)],
                            torch.nn.Linear(D, 1))
kind = {None: dict(foreach=False), 'foreach': dict(foreach=True),
        'fused': dict(fused=True)}[FIXED]
opt = torch.optim.Adam(model.parameters(), lr=1e-3, weight_decay=1e-5, **kind)
rows = torch.randn(64, 20)
y = rows[:, :3].sum(1, keepdim=True)
""",
        "base": """
opt.zero_grad(set_to_none=True)
torch.nn.functional.mse_loss(model(rows), y).backward()
opt.step()
""",
        "fixes": {
            "foreach": {"about": "Adam(..., foreach=True): one multi-tensor op per update step",
                        "match": ["fused-optimizer", "foreach"]},
            "fused": {"about": "Adam(..., fused=True): the fused CPU Adam kernel",
                      "match": ["fused-optimizer", "fused=true"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 10},
    },
    "denoiser_cnn_nchw_fp32": {
        "about": "a denoising CNN training step (5 3x3 convolutions of 32 channels, 8 noisy "
                 "64x64 RGB images) in the default NCHW layout and float32 on a CPU with "
                 "AVX-512 bf16",
        "setup": """
CH, S = (8, 16) if DRY else (32, 64)
body = [torch.nn.Conv2d(3, CH, 3, padding=1), torch.nn.ReLU()]
for _ in range(3):
    body += [torch.nn.Conv2d(CH, CH, 3, padding=1), torch.nn.ReLU()]
den = torch.nn.Sequential(*body, torch.nn.Conv2d(CH, 3, 3, padding=1))
clean = torch.rand(8, 3, S, S)
noisy = clean + 0.1 * torch.randn_like(clean)
if FIXED == 'channels_last':
    den = den.to(memory_format=torch.channels_last)
    clean = clean.contiguous(memory_format=torch.channels_last)
    noisy = noisy.contiguous(memory_format=torch.channels_last)
opt = torch.optim.Adam(den.parameters(), lr=1e-3)
import contextlib
def precision():
    if FIXED == 'bf16_autocast':
        return torch.autocast('cpu', dtype=torch.bfloat16)
    return contextlib.nullcontext()
""",
        "base": """
opt.zero_grad(set_to_none=True)
with precision():
    restored = noisy - den(noisy)
loss = torch.nn.functional.mse_loss(restored.float(), clean)
loss.backward()
opt.step()
""",
        "fixes": {
            "channels_last": {"about": "model and images in torch.channels_last",
                              "match": ["channels-last", "channels_last"]},
            "bf16_autocast": {"about": "torch.autocast('cpu', dtype=torch.bfloat16) around "
                                       "the forward",
                              "match": ["bf16-autocast", "autocast", "bfloat16"]},
        },
        "timing": {"warmup": 3, "blocks": 3, "iters": 5},
    },
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_cli.main(argv, (__doc__ or "").splitlines()[0], CASES, "cpu",
                            {"rounds": 3, "budget_s": 900.0, "record_calls": 12})


if __name__ == "__main__":
    main()
