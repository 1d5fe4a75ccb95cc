"""Held-out CPU programs: four common performance bugs, each fixed by hand and timed.

The programs and their fixes were written before autoprof's advice on them was read. Each is
timed with ``time.perf_counter`` in fresh processes without the profiler, program and fixes
interleaved, medians over blocks and over rounds (``gpu/heldout_driver.py``); each program as
written is recorded once with ``@autoprof`` (its defaults) into ``OUT/runs/``.

    PYTHONPATH=. .venv/bin/python benchmarks/cpu_heldout.py --out /tmp/cpu_heldout
    PYTHONPATH=. .venv/bin/python benchmarks/cpu_heldout.py --out /tmp/cpu_heldout --compare

The first writes ``OUT/truth.json`` (each fix's measured speed-up, its spread over rounds,
the machine, its load, the date, torch's version); the second reads the recorded runs'
advice beside it (``OUT/compare.md``). On a shared machine the load changes between rounds:
the truth is a median of per-round ratios, its min and max are kept beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "gpu"))

import heldout_cli  # noqa: E402
from heldout_driver import Case  # noqa: E402

CASES: dict[str, Case] = {
    "threads_oversubscribed": {
        "about": "an MLP training step (batch 64, width 512) with 8 intra-op threads set "
                 "by hand on a machine with fewer cores",
        "setup": """
CORES = len(os.sched_getaffinity(0))
torch.set_num_threads({None: 8, 'threads_cores': CORES, 'threads_1': 1}[FIXED])
W = 64 if DRY else 512
model = torch.nn.Sequential(torch.nn.Linear(W, W), torch.nn.ReLU(), torch.nn.Linear(W, W))
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
x = torch.randn(8 if DRY else 64, W)
""",
        "base": """
opt.zero_grad(set_to_none=True)
model(x).square().mean().backward()
opt.step()
""",
        "timing": {"warmup": 3, "blocks": 3, "iters": 5},
        "fixes": {
            "threads_cores": {"about": "torch.set_num_threads(number of cores)",
                              "match": ["set_num_threads", "intra-op", "oversubscri"]},
            "threads_1": {"about": "torch.set_num_threads(1)",
                          "match": ["set_num_threads(1)", "one thread", "1 thread"]},
        },
    },
    "compile_recompiles": {
        "about": "torch.compile(dynamic=False) over batches whose sequence length changes "
                 "(6 lengths, each seen twice): one compile per new length",
        "setup": """
import torch._dynamo
torch._dynamo.config.cache_size_limit = 64
mlp = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))
step_fn = torch.compile(mlp, backend='aot_eager', dynamic=FIXED == 'dynamic')
lengths = [16 * (1 + i % 6) for i in range(12)]
batches = [torch.randn(2 if DRY else 32, n, 64) for n in lengths]
state = {'i': 0}
""",
        "base": """
with torch.no_grad():
    step_fn(batches[state['i'] % len(batches)])
state['i'] += 1
""",
        "fixes": {
            "dynamic": {"about": "torch.compile(..., dynamic=True): one compile for every length",
                        "match": ["dynamic", "recompil"]},
        },
        "timing": {"warmup": 0, "blocks": 1, "iters": 12},
    },
    "pandas_rows_loader": {
        "about": "a DataLoader over a Dataset that builds each sample from a pandas row "
                 "(df.iloc[i]), batch 128, feeding a small MLP training step",
        "setup": """
import numpy as np, pandas as pd
from torch.utils.data import DataLoader, Dataset
ROWS, COLS = (512, 16) if DRY else (20000, 32)
df = pd.DataFrame(np.random.randn(ROWS, COLS).astype('float32'),
                  columns=[f'f{i}' for i in range(COLS)])
df['label'] = np.random.randint(0, 10, ROWS)
FEATS = [f'f{i}' for i in range(COLS)]
class Rows(Dataset):
    def __len__(self):
        return len(df)
    def __getitem__(self, i):
        row = df.iloc[i]
        return torch.tensor(row[FEATS].to_numpy('float32')), int(row['label'])
class Batched(Rows):
    def __getitems__(self, idx):
        part = df.iloc[idx]
        return (torch.tensor(part[FEATS].to_numpy('float32')),
                torch.tensor(part['label'].to_numpy()))
def _whole(b):
    return b
ds = Batched() if FIXED == 'getitems' else Rows()
kw = dict(collate_fn=_whole) if FIXED == 'getitems' else {}
workers = 2 if FIXED == 'workers_2' and not DRY else 0
loader = DataLoader(ds, batch_size=16 if DRY else 128, shuffle=True, num_workers=workers,
                    persistent_workers=workers > 0, **kw)
model = torch.nn.Sequential(torch.nn.Linear(COLS, 256), torch.nn.ReLU(),
                            torch.nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
state = {'it': iter(loader)}
def next_batch():
    try:
        return next(state['it'])
    except StopIteration:
        state['it'] = iter(loader)
        return next(state['it'])
""",
        "base": """
x, y = next_batch()
opt.zero_grad(set_to_none=True)
torch.nn.functional.cross_entropy(model(x), y).backward()
opt.step()
""",
        "fixes": {
            "getitems": {"about": "Dataset.__getitems__ that slices the DataFrame once per batch",
                         "match": ["__getitems__", "batched", "per-row", "per row"]},
            "workers_2": {"about": "DataLoader(num_workers=2, persistent_workers=True)",
                          "match": ["num_workers", "workers"]},
        },
        "timing": {"warmup": 2, "blocks": 3, "iters": 4},
    },
    "inference_with_grad": {
        "about": "inference of a 4-layer TransformerEncoder (d 256, 64 tokens x 16) with "
                 "autograd on: no no_grad / inference_mode",
        "setup": """
D = 32 if DRY else 256
layer = torch.nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True, dropout=0.0)
enc = torch.nn.TransformerEncoder(layer, 2 if DRY else 4, enable_nested_tensor=False).eval()
x = torch.randn(2 if DRY else 16, 16 if DRY else 64, D)
def infer():
    with torch.inference_mode():
        return enc(x)
""",
        "base": "y = enc(x)",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the forward",
                               "code": "y = infer()",
                               "match": ["inference_mode", "no_grad"]},
        },
        "timing": {"warmup": 3, "blocks": 3, "iters": 5},
    },
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_cli.main(argv, (__doc__ or "").splitlines()[0], CASES, "cpu",
                            {"rounds": 3, "budget_s": 420.0, "record_calls": 12})


if __name__ == "__main__":
    main()
