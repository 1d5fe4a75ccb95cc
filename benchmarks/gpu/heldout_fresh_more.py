"""Four of ``heldout_fresh.py``'s held-out inference programs: a DDIM sampler, a Transformer's
greedy decoding, a detector's post-processing and a ViT evaluation fed by a per-sample
DataLoader.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it. ``capture`` (``heldout_advice_fixes.CAPTURE``) is put
before the setups that call it by ``heldout_fresh.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

INFERENCE = ["inference-mode", "inference_mode", "no_grad"]

MORE: dict[str, Case] = {
    "ddim_sampler_grad": {
        "about": "a 20-step DDIM sampler over a conv denoiser (5 FiLM-conditioned residual "
                 "blocks, 64 channels, 32x32, batch 16) run with autograd on (no no_grad), "
                 "each step building its timestep batch and sinusoid frequencies on the host "
                 "and moving them",
        "setup": """
import math
torch.manual_seed(0)
C, R, B, STEPS = (8, 8, 2, 3) if DRY else (64, 32, 16, 20)
F = torch.nn.functional
ON_DEVICE = FIXED in ('on_device', 'cuda_graph')
class FiLMBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.GroupNorm(8, C)
        self.conv1 = torch.nn.Conv2d(C, C, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(C, C, 3, padding=1)
        self.film = torch.nn.Linear(C, 2 * C)
    def forward(self, x, temb):
        scale, shift = self.film(temb)[:, :, None, None].chunk(2, 1)
        h = F.silu(self.norm(self.conv1(x)) * (1 + scale) + shift)
        return x + self.conv2(h)
class Denoiser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inp = torch.nn.Conv2d(3, C, 3, padding=1)
        self.out = torch.nn.Conv2d(C, 3, 3, padding=1)
        self.blocks = torch.nn.ModuleList([FiLMBlock() for _ in range(5)])
        self.temb = torch.nn.Sequential(torch.nn.Linear(C, C), torch.nn.SiLU(),
                                        torch.nn.Linear(C, C))
    def forward(self, x, t):
        half = C // 2
        if ON_DEVICE:
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, device=t.device) / half)
        else:
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half) / half).to(t.device)
        angle = t[:, None].float() * freqs[None]
        temb = self.temb(torch.cat([angle.sin(), angle.cos()], 1))
        h = self.inp(x)
        for block in self.blocks:
            h = block(h, temb)
        return self.out(F.silu(h))
model = Denoiser().to(DEVICE).eval()
alphas_cumprod = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000), 0)
TIMESTEPS = list(range(999, -1, -1000 // STEPS))[:STEPS]
def timestep(t):
    if ON_DEVICE:
        return torch.full((B,), t, device=DEVICE)
    return torch.tensor([t] * B).to(DEVICE)
def sample():
    x = torch.randn(B, 3, R, R, device=DEVICE)
    for i, t in enumerate(TIMESTEPS):
        eps = model(x, timestep(t))
        a_t = alphas_cumprod[t]
        a_prev = alphas_cumprod[TIMESTEPS[i + 1]] if i + 1 < STEPS else torch.tensor(1.0)
        x0 = (x - (1 - a_t).sqrt() * eps) / a_t.sqrt()
        x = a_prev.sqrt() * x0 + (1 - a_prev).sqrt() * eps
    return x.clamp(-1, 1)
samples = []
static_out = torch.zeros(B, 3, R, R, device=DEVICE)
replay = None
if FIXED == 'cuda_graph':
    with torch.no_grad():
        replay = capture(lambda: static_out.copy_(sample()))
""",
        "base": "samples.append(sample().detach())\ndel samples[:-4]",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the sampler",
                               "code": """
with torch.inference_mode():
    samples.append(sample())
del samples[:-4]
""",
                               "match": INFERENCE},
            "on_device": {"about": "the timestep batch (torch.full(..., device=...)) and the "
                                   "frequencies (torch.arange(..., device=...)) made on the "
                                   "device",
                          "match": ["tensor-on-device", "device=x.device"]},
            "cuda_graph": {"about": "the whole 20-step sampler captured once under no_grad "
                                    "and replayed; capture refuses the host copies, so the "
                                    "timesteps and frequencies are made on the device",
                           "code": "replay()\nsamples.append(static_out.clone())\n"
                                   "del samples[:-4]",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 6},
    },
    "transformer_greedy_tolist": {
        "about": "greedy decoding with an nn.Transformer translator (2+2 layers, width 256, "
                 "vocab 4000, 48 source tokens, batch 32, 16 target tokens, the decoder "
                 "re-run over the prefix) with autograd on, reading each token with .tolist() "
                 "and checking finished.all() after every token",
        "setup": """
torch.manual_seed(0)
V, D, NH, S, TMAX, B = (50, 16, 2, 6, 4, 2) if DRY else (4000, 256, 4, 48, 16, 32)
BOS, EOS = 1, 2
class Translator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.src_emb, self.tgt_emb = torch.nn.Embedding(V, D), torch.nn.Embedding(V, D)
        self.pos = torch.nn.Embedding(64, D)
        self.core = torch.nn.Transformer(D, NH, 2, 2, 4 * D, 0.1, batch_first=True)
        self.out = torch.nn.Linear(D, V)
        self.register_buffer('positions', torch.arange(64))
        self.register_buffer('causal', torch.triu(torch.full((64, 64), float('-inf')), 1))
    def encode(self, src):
        return self.core.encoder(self.src_emb(src) + self.pos(self.positions[:src.shape[1]]))
    def next_logits(self, ys, memory):
        n = ys.shape[1]
        h = self.core.decoder(self.tgt_emb(ys) + self.pos(self.positions[:n]), memory,
                              tgt_mask=self.causal[:n, :n], tgt_is_causal=True)
        return self.out(h[:, -1])
model = Translator().to(DEVICE).eval()
sources = torch.randint(3, V, (4, B, S), device=DEVICE)
seen, outputs = [0], []
def translate(src, every):
    memory = model.encode(src)
    ys = torch.full((B, 1), BOS, device=DEVICE)
    finished = torch.zeros(B, dtype=torch.bool, device=DEVICE)
    tokens = []
    for step in range(TMAX):
        nxt = model.next_logits(ys, memory).argmax(-1).masked_fill(finished, EOS)
        if every == 1:
            tokens.append(nxt.tolist())
        ys = torch.cat([ys, nxt[:, None]], 1)
        finished = finished | (nxt == EOS)
        if (step + 1) % every == 0 and finished.all():
            break
    return tokens if every == 1 else ys[:, 1:].tolist()
def next_source():
    seen[0] += 1
    return sources[seen[0] % 4]
""",
        "base": "outputs.append(translate(next_source(), every=1))\ndel outputs[:-4]",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the decoding",
                               "code": """
with torch.inference_mode():
    outputs.append(translate(next_source(), every=1))
del outputs[:-4]
""",
                               "match": INFERENCE},
            "remove_sync": {"about": "tokens kept on the device (read once after the loop), "
                                     "finished.all() checked every 4 tokens",
                            "code": "outputs.append(translate(next_source(), every=4))\n"
                                    "del outputs[:-4]",
                            "match": ["remove-sync", ".tolist()", ".item()"]},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 6},
    },
    "detector_python_nms": {
        "about": "an anchor-free detector's inference (stride-8 conv backbone, 320x320, batch "
                 "4, 20 classes, 1600 locations an image) under inference_mode, post-processed "
                 "per image: score threshold by boolean mask, top 50, greedy NMS in a Python "
                 "while loop (a mask index and a sync per kept box)",
        "setup": """
torch.manual_seed(0)
R, B, C, K, TOP = (64, 2, 8, 3, 10) if DRY else (320, 4, 64, 20, 50)
S = 8
F = torch.nn.functional
def conv_bn(cin, cout, stride):
    return [torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False), torch.nn.BatchNorm2d(cout),
            torch.nn.ReLU(inplace=True)]
backbone = torch.nn.Sequential(*conv_bn(3, C, 2), *conv_bn(C, C, 1), *conv_bn(C, 2 * C, 2),
                               *conv_bn(2 * C, 2 * C, 1), *conv_bn(2 * C, 4 * C, 2),
                               *conv_bn(4 * C, 4 * C, 1)).to(DEVICE).eval()
cls_head = torch.nn.Conv2d(4 * C, K, 3, padding=1).to(DEVICE).eval()
box_head = torch.nn.Conv2d(4 * C, 4, 3, padding=1).to(DEVICE).eval()
ys_, xs_ = torch.meshgrid(torch.arange(R // S), torch.arange(R // S), indexing='ij')
centres = ((torch.stack([xs_, ys_], -1).reshape(-1, 2).float() + 0.5) * S).to(DEVICE)
images = torch.rand(4, B, 3, R, R, device=DEVICE)
seen, results = [0], []
def box_iou(a, b):
    area = lambda x: (x[..., 2] - x[..., 0]) * (x[..., 3] - x[..., 1])
    lt = torch.maximum(a[..., :, None, :2], b[..., None, :, :2])
    rb = torch.minimum(a[..., :, None, 2:], b[..., None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    return inter / (area(a)[..., :, None] + area(b)[..., None, :] - inter)
@torch.inference_mode()
def predict():
    seen[0] += 1
    feats = backbone(images[seen[0] % 4])
    cls = cls_head(feats).flatten(2).transpose(1, 2).sigmoid()
    ltrb = torch.exp(box_head(feats).flatten(2).transpose(1, 2).clamp(max=4.0)) * 2 * S
    boxes = torch.cat([centres - ltrb[..., :2], centres + ltrb[..., 2:]], -1)
    scores, labels = cls.max(-1)
    return boxes, scores, labels
@torch.inference_mode()
def greedy_nms(boxes, scores, labels):
    keep = scores > 0.05
    boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
    order = scores.argsort(descending=True)[:TOP]
    kept = []
    while order.numel() > 0:
        i = order[0]
        kept.append(i)
        if order.numel() == 1:
            break
        iou = box_iou(boxes[i][None], boxes[order[1:]])[0]
        order = order[1:][iou <= 0.5]
    kept = torch.stack(kept)
    return boxes[kept], scores[kept], labels[kept]
@torch.inference_mode()
def fast_nms(boxes, scores, labels):
    '''Fast NMS (YOLACT): the top boxes' IoU matrix at once, a box dropped when a higher-
    scoring box overlaps it; fixed-size outputs, the dropped scores zeroed.'''
    scores = torch.where(scores > 0.05, scores, torch.zeros_like(scores))
    top, order = scores.topk(TOP, dim=-1)
    picked = boxes.gather(-2, order[..., None].expand(*order.shape, 4))
    iou = box_iou(picked, picked).triu(1)
    keep = (iou.max(-2).values <= 0.5) & (top > 0.05)
    return picked, torch.where(keep, top, torch.zeros_like(top)), labels.gather(-1, order)
""",
        "base": """
boxes, scores, labels = predict()
results.append([greedy_nms(boxes[b], scores[b], labels[b]) for b in range(B)])
del results[:-4]
""",
        "fixes": {
            "fast_nms": {"about": "Fast NMS per image: threshold by torch.where, topk, one IoU "
                                  "matrix, fixed-size outputs (no mask index, no while loop)",
                         "code": """
boxes, scores, labels = predict()
results.append([fast_nms(boxes[b], scores[b], labels[b]) for b in range(B)])
del results[:-4]
""",
                         "match": ["vectorise", "vectoriz", "remove-sync", "python loop",
                                   "nonzero"]},
            "fast_nms_batched": {"about": "the same Fast NMS over the whole batch at once "
                                          "(batched IoU matrices, no loop over images)",
                                 "code": "results.append(fast_nms(*predict()))\n"
                                         "del results[:-4]",
                                 "match": ["vectorise", "vectoriz", "remove-sync",
                                           "python loop", "nonzero"]},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 6},
    },
    "vit_eval_sample_loader": {
        "about": "a ViT-Tiny evaluation (patch 16 on 128x128 crops: 64 tokens, width 192, 12 "
                 "blocks, 1000 classes, batch 64, bf16 autocast, inference_mode) fed by a "
                 "DataLoader (num_workers=0, no pin_memory) whose Dataset crops, flips and "
                 "normalises one uint8 144x144 image at a time on the host",
        "setup": """
import random
torch.manual_seed(0)
SIDE, CROP, B, N_IMG = (20, 16, 4, 16) if DRY else (144, 128, 64, 256)
P, D, L, NH, K = (8, 16, 1, 2, 10) if DRY else (16, 192, 12, 3, 1000)
MEAN = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1) * 255
STD = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1) * 255
MEAN_D, STD_D = MEAN.to(DEVICE), STD.to(DEVICE)
class Crops(torch.utils.data.Dataset):
    def __init__(self):
        self.images = torch.randint(0, 256, (N_IMG, 3, SIDE, SIDE), dtype=torch.uint8)
        self.labels = torch.randint(0, K, (N_IMG,))
    def __len__(self):
        return 1_000_000
    def __getitem__(self, i):
        img = self.images[i % N_IMG]
        y, x = random.randint(0, SIDE - CROP), random.randint(0, SIDE - CROP)
        img = img[:, y:y + CROP, x:x + CROP]
        if random.random() < 0.5:
            img = img.flip(2)
        return (img.float() - MEAN) / STD, self.labels[i % N_IMG]
class BatchedCrops(Crops):
    def __getitems__(self, indices):
        idx = torch.tensor(indices) % N_IMG
        n, ar = len(indices), torch.arange(CROP)
        oy = torch.randint(0, SIDE - CROP + 1, (n, 1))
        ox = torch.randint(0, SIDE - CROP + 1, (n, 1))
        flip = torch.rand(n, 1) < 0.5
        rows = (oy + ar)[:, :, None]
        cols = (ox + torch.where(flip, CROP - 1 - ar, ar))[:, None, :]
        return self.images[idx[:, None, None], :, rows, cols], self.labels[idx]
def keep_batch(batch):
    return batch
loader_kw = {'loader_workers': dict(num_workers=4 if DRY else 6, persistent_workers=True,
                                    prefetch_factor=4),
             'pinned': dict(pin_memory=CUDA),
             'batched_dataset': dict(collate_fn=keep_batch)}.get(FIXED, {})
dataset = BatchedCrops() if FIXED == 'batched_dataset' else Crops()
loader = torch.utils.data.DataLoader(dataset, batch_size=B, shuffle=True, **loader_kw)
class ViT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, D, P, stride=P)
        self.cls = torch.nn.Parameter(torch.zeros(1, 1, D))
        self.pos = torch.nn.Parameter(torch.zeros(1, (CROP // P) ** 2 + 1, D))
        layer = torch.nn.TransformerEncoderLayer(D, NH, 4 * D, 0.0, 'gelu', batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, K)
    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])
model = ViT().to(DEVICE).eval()
batches = iter(loader)
correct = [torch.zeros((), dtype=torch.long, device=DEVICE)]
def evaluate(x, y):
    with torch.inference_mode(), torch.autocast(DEVICE, dtype=torch.bfloat16):
        logits = model(x)
    correct[0] = correct[0] + (logits.argmax(-1) == y).sum()
""",
        "base": """
x, y = next(batches)
evaluate(x.to(DEVICE), y.to(DEVICE))
""",
        "fixes": {
            "loader_workers": {"about": "DataLoader(num_workers=6, persistent_workers=True, "
                                        "prefetch_factor=4)",
                               "match": ["loader-workers", "num_workers"]},
            "pinned": {"about": "DataLoader(pin_memory=True), the batch copied with "
                                ".to(device, non_blocking=True)",
                       "code": """
x, y = next(batches)
evaluate(x.to(DEVICE, non_blocking=True), y.to(DEVICE, non_blocking=True))
""",
                       "match": ["pin-memory", "pin_memory", "pinned", "non_blocking"]},
            "batched_dataset": {"about": "the Dataset's __getitems__ crops and flips the whole "
                                         "batch with one index (uint8), normalised on the GPU",
                                "code": """
x, y = next(batches)
x = x.to(DEVICE).permute(0, 3, 1, 2).float()
evaluate((x - MEAN_D) / STD_D, y.to(DEVICE))
""",
                                "match": ["batched-dataset", "__getitems__",
                                          "batchsampler"]},
        },
        "timing": {"warmup": 10, "blocks": 5, "iters": 12},
    },
}
