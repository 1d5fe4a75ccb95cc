"""Held-out CPU programs for the catalogue's batched-dataset entry, each fixed by hand and timed.

Three programs whose DataLoader builds every batch one sample at a time in Python (a
`Dataset.__getitem__` per row, then `default_collate`), unlike the development program
(``cpu_heldout.py``'s `pandas_rows_loader`) and the tests' fixtures: uint8 images augmented
per sample, token lists tensorised per sample into a dict, string records parsed per sample.
Each has its batched fix by hand (a `__getitems__` that builds the whole batch at once, or a
dataset indexed by a batch of indices under `batch_size=None` and a `BatchSampler`) and the
background-workers fix (`num_workers=2`), so that the entry's rank against the workers hint
can be judged. The programs and their fixes were written and committed before the entry's
code ran on them. Timed and recorded by the same driver as ``cpu_heldout.py``
(``gpu/heldout_driver.py``): fresh processes without the profiler, program and fixes
interleaved, medians over blocks and over rounds; each program as written recorded once with
``@autoprof`` (its defaults) into ``OUT/runs/``.

    PYTHONPATH=. .venv/bin/python benchmarks/cpu_loader_heldout.py --out /tmp/loader
    PYTHONPATH=. .venv/bin/python benchmarks/cpu_loader_heldout.py --out /tmp/loader --compare
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "gpu"))

import heldout_cli  # noqa: E402
from heldout_driver import Case  # noqa: E402

# the words that name each fix in autoprof's advice
BATCHED = ["__getitems__", "batchsampler", "batch_size=none"]
WORKERS = ["num_workers"]
TIMING = {"warmup": 3, "blocks": 3, "iters": 6}

# the loop shared by the programs: the next batch, a new epoch when one ends
NEXT_BATCH = """
state = {}
def next_batch():
    if 'it' not in state:
        state['it'] = iter(loader)
    try:
        return next(state['it'])
    except StopIteration:
        state['it'] = iter(loader)
        return next(state['it'])
def _whole(batch):
    return batch
workers = 2 if FIXED == 'workers_2' and not DRY else 0
"""

CASES: dict[str, Case] = {
    "image_rows_augment": {
        "about": "a DataLoader over uint8 32x32 RGB images in a numpy array, each sample "
                 "converted, randomly flipped and normalised with torch ops in __getitem__, "
                 "batch 64, feeding a small CNN training step",
        "setup": NEXT_BATCH + """
import random
import numpy as np
from torch.utils.data import DataLoader, Dataset
rng = np.random.default_rng(0)
N = 256 if DRY else 4096
images = rng.integers(0, 256, (N, 32, 32, 3), dtype=np.uint8)
labels = rng.integers(0, 10, N)
MEAN = torch.tensor([0.49, 0.48, 0.45]).view(3, 1, 1)
STD = torch.tensor([0.25, 0.24, 0.26]).view(3, 1, 1)
class Images(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        img = torch.from_numpy(images[i]).permute(2, 0, 1).float().div(255)
        if random.random() < 0.5:
            img = torch.flip(img, dims=[2])
        return (img - MEAN) / STD, int(labels[i])
class BatchedImages(Images):
    def __getitems__(self, idx):
        x = torch.from_numpy(images[idx]).permute(0, 3, 1, 2).float().div(255)
        flip = torch.rand(len(idx)) < 0.5
        x = torch.where(flip.view(-1, 1, 1, 1), torch.flip(x, dims=[3]), x)
        return (x - MEAN) / STD, torch.from_numpy(labels[idx])
batched = FIXED == 'getitems'
loader = DataLoader(BatchedImages() if batched else Images(), batch_size=16 if DRY else 64,
                    shuffle=True, num_workers=workers, persistent_workers=workers > 0,
                    **(dict(collate_fn=_whole) if batched else {}))
net = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                          torch.nn.MaxPool2d(4), torch.nn.Flatten(),
                          torch.nn.Linear(8 * 8 * 8, 10))
opt = torch.optim.SGD(net.parameters(), lr=1e-2)
""",
        "base": """
x, y = next_batch()
opt.zero_grad(set_to_none=True)
torch.nn.functional.cross_entropy(net(x), y).backward()
opt.step()
""",
        "fixes": {
            "getitems": {"about": "Images.__getitems__ that converts, flips and normalises "
                                  "the whole batch with one op each",
                         "match": BATCHED},
            "workers_2": {"about": "DataLoader(num_workers=2, persistent_workers=True)",
                          "match": WORKERS},
        },
        "timing": TIMING,
    },
    "token_dict_samples": {
        "about": "a DataLoader over token id lists held as Python lists, each sample a dict "
                 "of three tensors built in __getitem__ (ids, mask, label), collated by "
                 "default_collate, batch 64, feeding an EmbeddingBag classifier step",
        "setup": NEXT_BATCH + """
import random
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler
random.seed(0)
N, L, V = (256, 16, 100) if DRY else (4096, 96, 5000)
tokens = [[random.randrange(1, V) if j < random.randrange(L // 2, L + 1) else 0
           for j in range(L)] for _ in range(N)]
targets = [random.randrange(4) for _ in range(N)]
class Samples(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        ids = torch.tensor(tokens[i], dtype=torch.long)
        return {'ids': ids, 'mask': ids != 0, 'label': torch.tensor(targets[i])}
class Vectorised(Dataset):
    def __init__(self):
        self.ids = torch.tensor(tokens, dtype=torch.long)
        self.labels = torch.tensor(targets)
    def __len__(self):
        return N
    def __getitem__(self, idx):
        ids = self.ids[idx]
        return {'ids': ids, 'mask': ids != 0, 'label': self.labels[idx]}
B = 16 if DRY else 64
if FIXED == 'batch_sampler':
    ds = Vectorised()
    loader = DataLoader(ds, batch_size=None,
                        sampler=BatchSampler(RandomSampler(ds), B, drop_last=False))
else:
    loader = DataLoader(Samples(), batch_size=B, shuffle=True, num_workers=workers,
                        persistent_workers=workers > 0)
emb = torch.nn.EmbeddingBag(V, 64, mode='sum')
head = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
opt = torch.optim.Adam([*emb.parameters(), *head.parameters()], lr=1e-3)
""",
        "base": """
b = next_batch()
opt.zero_grad(set_to_none=True)
w = b['mask'].float()
logits = head(emb(b['ids'], per_sample_weights=w / w.sum(1, keepdim=True)))
torch.nn.functional.cross_entropy(logits, b['label']).backward()
opt.step()
""",
        "fixes": {
            "batch_sampler": {"about": "the token lists as one tensor, indexed by a batch of "
                                       "indices: DataLoader(batch_size=None, "
                                       "sampler=BatchSampler(RandomSampler(ds), 64))",
                              "match": BATCHED},
            "workers_2": {"about": "DataLoader(num_workers=2, persistent_workers=True)",
                          "match": WORKERS},
        },
        "timing": TIMING,
    },
    "string_records_parse": {
        "about": "a DataLoader over CSV-like string records (dicts of str), each sample's "
                 "numbers parsed and its category one-hot encoded into tensors in "
                 "__getitem__, batch 128, feeding an MLP regression step",
        "setup": NEXT_BATCH + """
import random
from torch.utils.data import DataLoader, Dataset
random.seed(0)
N = 512 if DRY else 8192
CITIES = [f'city_{k}' for k in range(24)]
NUMS = [f'x{k}' for k in range(12)]
records = [{**{c: f'{random.gauss(0, 1):.4f}' for c in NUMS},
            'city': random.choice(CITIES), 'y': f'{random.gauss(0, 1):.3f}'}
           for _ in range(N)]
CITY = {c: k for k, c in enumerate(CITIES)}
class Records(Dataset):
    def __len__(self):
        return N
    def __getitem__(self, i):
        r = records[i]
        nums = torch.tensor([float(r[c]) for c in NUMS])
        onehot = torch.zeros(len(CITIES))
        onehot[CITY[r['city']]] = 1.0
        return torch.cat([nums, onehot]), torch.tensor([float(r['y'])])
class BatchedRecords(Records):
    def __getitems__(self, idx):
        rows = [records[i] for i in idx]
        nums = torch.tensor([[float(r[c]) for c in NUMS] for r in rows])
        onehot = torch.nn.functional.one_hot(
            torch.tensor([CITY[r['city']] for r in rows]), len(CITIES)).float()
        return torch.cat([nums, onehot], 1), torch.tensor([[float(r['y'])] for r in rows])
batched = FIXED == 'getitems'
loader = DataLoader(BatchedRecords() if batched else Records(),
                    batch_size=16 if DRY else 128, shuffle=True, num_workers=workers,
                    persistent_workers=workers > 0,
                    **(dict(collate_fn=_whole) if batched else {}))
mlp = torch.nn.Sequential(torch.nn.Linear(36, 128), torch.nn.ReLU(), torch.nn.Linear(128, 1))
opt = torch.optim.SGD(mlp.parameters(), lr=1e-3)
""",
        "base": """
x, y = next_batch()
opt.zero_grad(set_to_none=True)
torch.nn.functional.mse_loss(mlp(x), y).backward()
opt.step()
""",
        "fixes": {
            "getitems": {"about": "Records.__getitems__ that parses the batch's rows into "
                                  "one tensor and one-hot encodes them with one op",
                         "match": BATCHED},
            "workers_2": {"about": "DataLoader(num_workers=2, persistent_workers=True)",
                          "match": WORKERS},
        },
        "timing": TIMING,
    },
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_cli.main(argv, (__doc__ or "").splitlines()[0], CASES, "cpu",
                            {"rounds": 3, "budget_s": 600.0, "record_calls": 12})


if __name__ == "__main__":
    main()
