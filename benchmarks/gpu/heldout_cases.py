"""Held-out GPU programs: eight common performance bugs, each fixed by hand and timed.

The programs and their fixes were written before autoprof's advice on them was read, and
differ from ``catalogue_cases.py`` (other models, shapes and fixes). Each is timed with CUDA
events in fresh processes without the profiler, program and fixes interleaved, medians over
blocks and rounds (``heldout_driver.py``); each program as written is recorded once with
``@autoprof`` (its defaults) into ``OUT/runs/``.

    PYTHONPATH=. python benchmarks/gpu/heldout_cases.py --out OUT            # on a GPU
    PYTHONPATH=. python benchmarks/gpu/heldout_cases.py --out OUT --compare  # anywhere
    PYTHONPATH=. python benchmarks/gpu/heldout_cases.py --out OUT --dry-run  # CPU, tiny sizes

``--dry-run`` runs every program and fix on the CPU at tiny sizes, one round (the fixes that
need CUDA fall back to the program as written there): it proves the programs run, not what
they measure.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import heldout_cli  # noqa: E402
from heldout_driver import Case  # noqa: E402
from heldout_more import MORE  # noqa: E402

CASES: dict[str, Case] = {
    "pageable_uint8_images": {
        "about": "a small conv net trained on uint8 images (128x3x128x128, 6 MiB) copied each "
                 "step from pageable host memory, then cast to float on the device",
        "setup": """
N, R = (4, 16) if DRY else (128, 128)
host = torch.randint(0, 255, (N, 3, R, R), dtype=torch.uint8)
pinned = host.pin_memory() if CUDA else host
labels = torch.randint(0, 10, (N,), device=DEVICE)
net = torch.nn.Sequential(torch.nn.Conv2d(3, 16, 3, stride=2), torch.nn.ReLU(),
                          torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                          torch.nn.Linear(16, 10)).to(DEVICE)
opt = torch.optim.SGD(net.parameters(), lr=1e-2)
def train(images):
    x = images.float().div_(255)
    opt.zero_grad(set_to_none=True)
    torch.nn.functional.cross_entropy(net(x), labels).backward()
    opt.step()
""",
        "base": "train(host.to(DEVICE))",
        "fixes": {
            "pinned_non_blocking": {
                "about": "a pinned host buffer, .to(device, non_blocking=True)",
                "code": "train(pinned.to(DEVICE, non_blocking=True))",
                "match": ["pin_memory", "pinned", "non_blocking"]},
        },
    },
    "per_sample_loss_loop": {
        "about": "a classifier's loss computed per sample in a Python loop (128 cross-entropy "
                 "calls on 1-row slices), then backward",
        "setup": """
B, D, C = (8, 32, 10) if DRY else (128, 512, 100)
head = torch.nn.Linear(D, C).to(DEVICE)
x = torch.randn(B, D, device=DEVICE)
y = torch.randint(0, C, (B,), device=DEVICE)
F = torch.nn.functional
""",
        "base": """
logits = head(x)
loss = sum(F.cross_entropy(logits[i:i + 1], y[i:i + 1]) for i in range(B)) / B
loss.backward()
""",
        "fixes": {
            "vectorised": {"about": "one F.cross_entropy over the batch",
                           "code": "F.cross_entropy(head(x), y).backward()",
                           "match": ["vectoris", "vectoriz", "python loop", "per-row",
                                     "per row"]},
        },
    },
    "fp16_scaler_encoder": {
        "about": "two TransformerEncoderLayers (d 256) trained with fp16 autocast, "
                 "GradScaler and AdamW (the scaler's step syncs on its inf check)",
        "setup": """
D, B, T = (32, 2, 8) if DRY else (256, 16, 64)
layer = torch.nn.TransformerEncoderLayer(D, 4, 4 * D, batch_first=True, dropout=0.0)
model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=FIXED == 'fused_adamw' and CUDA)
scaler = torch.amp.GradScaler(DEVICE, enabled=CUDA)
x = torch.randn(B, T, D, device=DEVICE)
def bf16_step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        loss = model(x).float().square().mean()
    loss.backward()
    opt.step()
""",
        "base": """
opt.zero_grad(set_to_none=True)
with torch.autocast(DEVICE, dtype=torch.float16, enabled=CUDA):
    loss = model(x).float().square().mean()
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
""",
        "fixes": {
            "bf16_no_scaler": {"about": "bf16 autocast, no GradScaler", "code": "bf16_step()",
                               "match": ["bf16", "bfloat16", "without a scaler"]},
            "fused_adamw": {"about": "AdamW(..., fused=True) under the same fp16 GradScaler",
                            "match": ["fused-optimizer", "fused=true", "fused adam",
                                      "fused optimizer"]},
        },
    },
    "decode_eos_item": {
        "about": "greedy decoding with a GRU cell (hidden 512, vocab 2000), one token per call,"
                 " reading (tok == EOS).all().item() after every token",
        "setup": """
H, V, B = (16, 50, 2) if DRY else (512, 2000, 8)
emb = torch.nn.Embedding(V, H).to(DEVICE)
cell = torch.nn.GRUCell(H, H).to(DEVICE)
head = torch.nn.Linear(H, V).to(DEVICE)
state = {'tok': torch.zeros(B, dtype=torch.long, device=DEVICE),
         'h': torch.zeros(B, H, device=DEVICE), 'n': 0}
EOS = V - 1
@torch.no_grad()
def token():
    state['h'] = cell(emb(state['tok']), state['h'])
    state['tok'] = head(state['h']).argmax(-1)
    state['n'] += 1
""",
        "base": """
token()
if (state['tok'] == EOS).all().item():
    state['tok'].zero_()
""",
        "fixes": {
            "check_every_32": {
                "about": "check for EOS once every 32 tokens (trim after)",
                "code": """
token()
if state['n'] % 32 == 0 and (state['tok'] == EOS).all().item():
    state['tok'].zero_()
""",
                "match": [".item()", "sync"]},
        },
        "timing": {"warmup": 20, "blocks": 5, "iters": 64},
    },
    **MORE,
}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    return heldout_cli.main(argv, (__doc__ or "").splitlines()[0], CASES, "cuda",
                            {"rounds": 5, "budget_s": 300.0, "record_calls": 20})


if __name__ == "__main__":
    main()
