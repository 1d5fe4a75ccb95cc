"""Four of ``heldout_next.py``'s held-out programs: a mask head's per-detection paste loop, a
PointNet trained from pageable host batches, a masked-LM fed by a per-sample DataLoader and
a GPT-style language model trained in fp32.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it where one does. ``capture``
(``heldout_advice_fixes.CAPTURE``) is put before the setups that call it by
``heldout_next.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

PINNED = ["pin-memory", "pin_memory", "pinned", "non_blocking"]

CASES: dict[str, Case] = {
    "mask_paste_loop": {
        "about": "a Mask R-CNN-style mask head (4 convs of 256 channels on 14x14 RoI "
                 "features, a 2x deconvolution, 80 class logits at 28x28) under "
                 "inference_mode for 4 images of 24 detections, each mask pasted into the "
                 "320x320 image in a Python loop over images and detections: a grid from "
                 "the box, grid_sample, threshold, area, mask score, rescoring (about 40 "
                 "ops a detection)",
        "setup": """
torch.manual_seed(0)
B, N, R, C, K = (2, 3, 24, 8, 5) if DRY else (4, 24, 320, 256, 80)
F = torch.nn.functional
convs = [m for _ in range(4) for m in (torch.nn.Conv2d(C, C, 3, padding=1), torch.nn.ReLU())]
mask_head = torch.nn.Sequential(*convs, torch.nn.ConvTranspose2d(C, C, 2, stride=2),
                                torch.nn.ReLU(), torch.nn.Conv2d(C, K, 1)).to(DEVICE).eval()
roi_feats = torch.randn(4, B * N, C, 14, 14, device=DEVICE)
corner = torch.rand(4, B, N, 2, device=DEVICE) * R * 0.7
size = torch.rand(4, B, N, 2, device=DEVICE) * R * 0.3 + 4
all_boxes = torch.cat([corner, corner + size], -1)
all_scores = torch.rand(4, B, N, device=DEVICE)
all_labels = torch.randint(0, K, (4, B * N), device=DEVICE)
centres = torch.arange(R, device=DEVICE, dtype=torch.float32) + 0.5
seen, results = [0], []
def mask_probs(feats, labels):
    logits = mask_head(feats)
    picked = logits[torch.arange(B * N, device=feats.device), labels]
    return picked.sigmoid().view(B, N, 28, 28)
def paste_one(prob, box, score):
    x0, y0, x1, y1 = box.unbind(0)
    gx = (centres - x0) / (x1 - x0) * 2 - 1
    gy = (centres - y0) / (y1 - y0) * 2 - 1
    grid = torch.stack([gx[None, :].expand(R, R), gy[:, None].expand(R, R)], -1)
    pasted = F.grid_sample(prob[None, None], grid[None], align_corners=False)[0, 0]
    binary = pasted > 0.5
    area = binary.sum()
    mask_score = (pasted * binary).sum() / area.clamp(min=1)
    return binary, area, score * mask_score
def paste_loop(probs, boxes, scores):
    out = []
    for b in range(B):
        masks, areas, rescored = [], [], []
        for i in range(N):
            m, a, s = paste_one(probs[b, i], boxes[b, i], scores[b, i])
            masks.append(m)
            areas.append(a)
            rescored.append(s)
        out.append((torch.stack(masks), torch.stack(areas), torch.stack(rescored)))
    return out
def paste_batched(probs, boxes, scores):
    x0, y0, x1, y1 = boxes.unbind(-1)
    gx = (centres - x0[..., None]) / (x1 - x0)[..., None] * 2 - 1
    gy = (centres - y0[..., None]) / (y1 - y0)[..., None] * 2 - 1
    grid = torch.stack([gx[..., None, :].expand(B, N, R, R),
                        gy[..., :, None].expand(B, N, R, R)], -1)
    pasted = F.grid_sample(probs.reshape(B * N, 1, 28, 28), grid.reshape(B * N, R, R, 2),
                           align_corners=False).view(B, N, R, R)
    binary = pasted > 0.5
    area = binary.sum((2, 3))
    mask_score = (pasted * binary).sum((2, 3)) / area.clamp(min=1)
    return binary, area, scores * mask_score
def inputs():
    seen[0] += 1
    k = seen[0] % 4
    return roi_feats[k], all_labels[k], all_boxes[k], all_scores[k]
@torch.inference_mode()
def predict(paste):
    feats, labels, boxes, scores = inputs()
    return paste(mask_probs(feats, labels), boxes, scores)
static_in = [t.clone() for t in inputs()]
static_out = []
def _graphed():
    static_out[:] = paste_loop(mask_probs(*static_in[:2]), *static_in[2:])
replay = None
if FIXED == 'cuda_graph':
    with torch.no_grad():
        replay = capture(_graphed)
def predict_graphed():
    for buf, t in zip(static_in, inputs()):
        buf.copy_(t)
    replay()
    return [tuple(t.clone() for t in image) for image in static_out]
""",
        "base": "results.append(predict(paste_loop))\ndel results[:-4]",
        "fixes": {
            "vectorised": {"about": "every detection of every image pasted at once: one "
                                    "batched grid, one grid_sample, areas and scores by "
                                    "reductions over the masks",
                           "code": "results.append(predict(paste_batched))\n"
                                   "del results[:-4]",
                           "match": ["vectorise", "vectoriz", "python loop", "per-detection"]},
            "cuda_graph": {"about": "the mask head and the paste loop as written captured "
                                    "once under no_grad (inputs copied into static tensors, "
                                    "outputs cloned) and replayed",
                           "code": "results.append(predict_graphed())\ndel results[:-4]",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 6},
    },
    "pointnet_pageable_points": {
        "about": "a PointNet segmentation network (shared 1x1-conv MLPs 9-64-64 and 64-128-256 "
                 "with BatchNorm, a max-pooled global feature, a 320-128-64-13 head; 32 clouds "
                 "of 8192 points) trained with Adam on batches held in pageable host memory "
                 "(9.4 MB of points and 2.1 MB of int64 labels a batch), each copied with "
                 ".to(device)",
        "setup": """
torch.manual_seed(0)
B, P, K = (2, 64, 4) if DRY else (32, 8192, 13)
F = torch.nn.functional
def shared_mlp(sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Conv1d(a, b, 1, bias=False), torch.nn.BatchNorm1d(b),
                   torch.nn.ReLU()]
    return layers
class PointNetSeg(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.local = torch.nn.Sequential(*shared_mlp([9, 64, 64]))
        self.glob = torch.nn.Sequential(*shared_mlp([64, 128, 256]))
        self.seg = torch.nn.Sequential(*shared_mlp([320, 128, 64]), torch.nn.Dropout(0.3),
                                       torch.nn.Conv1d(64, K, 1))
    def forward(self, points):
        local = self.local(points.transpose(1, 2))
        glob = self.glob(local).amax(2, keepdim=True).expand(-1, -1, points.shape[1])
        return self.seg(torch.cat([local, glob], 1))
model = PointNetSeg().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
batches = [(torch.randn(B, P, 9), torch.randint(0, K, (B, P))) for _ in range(4)]
if FIXED in ('pinned_non_blocking', 'side_stream_prefetch') and CUDA:
    batches = [tuple(t.pin_memory() for t in batch) for batch in batches]
if FIXED == 'resident':
    batches = [tuple(t.to(DEVICE) for t in batch) for batch in batches]
seen = [0]
def next_batch():
    seen[0] += 1
    return batches[seen[0] % len(batches)]
def train(points, labels):
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(model(points), labels).backward()
    opt.step()
copy_stream = torch.cuda.Stream() if CUDA else None
def to_device(batch):
    if copy_stream is None:
        return tuple(t.to(DEVICE) for t in batch)
    with torch.cuda.stream(copy_stream):
        return tuple(t.to(DEVICE, non_blocking=True) for t in batch)
ahead = []
def prefetched():
    '''the batch copied on the side stream during the previous step; the next one begun'''
    if not ahead:
        ahead.append(to_device(next_batch()))
    batch = ahead.pop()
    if copy_stream is not None:
        torch.cuda.current_stream().wait_stream(copy_stream)
        for t in batch:
            t.record_stream(torch.cuda.current_stream())
    ahead.append(to_device(next_batch()))
    return batch
""",
        "base": "points, labels = next_batch()\ntrain(points.to(DEVICE), labels.to(DEVICE))",
        "fixes": {
            "pinned_non_blocking": {
                "about": "the host batches pinned once, copied with .to(device, "
                         "non_blocking=True)",
                "code": "points, labels = next_batch()\n"
                        "train(points.to(DEVICE, non_blocking=True), "
                        "labels.to(DEVICE, non_blocking=True))",
                "match": PINNED},
            "side_stream_prefetch": {
                "about": "pinned batches, the next one copied non_blocking on a side stream "
                         "while this step runs (wait_stream, record_stream)",
                "code": "train(*prefetched())",
                "match": ["pin-memory", "prefetch", "side stream", "non_blocking"]},
            "resident": {"about": "the four batches moved to the GPU once, before the loop "
                                  "(each .to(device) then a no-op)",
                         "match": ["tensor-on-device", "before the loop"]},
        },
    },
    "mlm_masking_loader": {
        "about": "a BERT-style masked-LM pretraining step (4 pre-norm encoder layers, width "
                 "256, vocab 8000, 128 tokens, batch 128, bf16 autocast, AdamW) fed by a "
                 "DataLoader (num_workers=0) whose Dataset cuts a window and applies the "
                 "80/10/10 masking to one sample at a time on the host (about 20 tensor ops "
                 "a sample)",
        "setup": """
torch.manual_seed(0)
V, T, B, D, L, NH = (100, 16, 4, 16, 1, 2) if DRY else (8000, 128, 128, 256, 4, 4)
CORPUS = 20_000 if DRY else 2_000_000
PAD, CLS, SEP, MASK = 0, 1, 2, 3
F = torch.nn.functional
def bert_mask(ids):
    '''15% of the non-special tokens chosen: 80% [MASK], 10% a random word, 10% kept'''
    special = (ids == CLS) | (ids == SEP) | (ids == PAD)
    prob = torch.full(ids.shape, 0.15, device=ids.device).masked_fill(special, 0.0)
    chosen = torch.bernoulli(prob).bool()
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    replace = torch.bernoulli(torch.full(ids.shape, 0.8, device=ids.device)).bool() & chosen
    coin = torch.bernoulli(torch.full(ids.shape, 0.5, device=ids.device)).bool()
    randomise = coin & chosen & ~replace
    words = torch.randint(5, V, ids.shape, device=ids.device)
    inputs = torch.where(replace, torch.full_like(ids, MASK), ids)
    return torch.where(randomise, words, inputs), labels
class MaskedWindows(torch.utils.data.Dataset):
    def __init__(self, mask_here):
        self.tokens = torch.randint(5, V, (CORPUS,))
        self.mask_here = mask_here
    def __len__(self):
        return 1_000_000
    def __getitem__(self, i):
        start = (i * 7919) % (CORPUS - T + 2)
        ids = torch.cat([torch.tensor([CLS]), self.tokens[start:start + T - 2],
                         torch.tensor([SEP])])
        return bert_mask(ids) if self.mask_here else ids
class BatchedMaskedWindows(MaskedWindows):
    def __getitems__(self, indices):
        starts = (torch.tensor(indices) * 7919) % (CORPUS - T + 2)
        body = self.tokens[starts[:, None] + torch.arange(T - 2)]
        n = len(indices)
        ids = torch.cat([torch.full((n, 1), CLS), body, torch.full((n, 1), SEP)], 1)
        return bert_mask(ids)
def keep_batch(batch):
    return batch
loader_kw = {'loader_workers': dict(num_workers=2 if DRY else 6, persistent_workers=True,
                                    prefetch_factor=4),
             'batched_dataset': dict(collate_fn=keep_batch)}.get(FIXED, {})
dataset = {'batched_dataset': BatchedMaskedWindows(True),
           'gpu_masking': MaskedWindows(False)}.get(FIXED, MaskedWindows(True))
loader = torch.utils.data.DataLoader(dataset, batch_size=B, shuffle=True, drop_last=True,
                                     **loader_kw)
class MaskedLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.pos = torch.nn.Parameter(torch.randn(1, T, D) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(D, NH, 4 * D, 0.1, 'gelu', batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
        self.norm = torch.nn.LayerNorm(D)
    def forward(self, ids):
        return self.norm(self.encoder(self.emb(ids) + self.pos)) @ self.emb.weight.T
model = MaskedLM().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
batches = iter(loader)
def train(inputs, labels):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        logits = model(inputs)
    F.cross_entropy(logits.float().view(-1, V), labels.view(-1), ignore_index=-100).backward()
    opt.step()
""",
        "base": "inputs, labels = next(batches)\ntrain(inputs.to(DEVICE), labels.to(DEVICE))",
        "fixes": {
            "loader_workers": {"about": "DataLoader(num_workers=6, persistent_workers=True, "
                                        "prefetch_factor=4)",
                               "match": ["loader-workers", "num_workers"]},
            "batched_dataset": {"about": "the Dataset's __getitems__ cuts and masks the whole "
                                         "batch with one index and batched ops "
                                         "(collate_fn passes it through)",
                                "match": ["batched-dataset", "__getitems__", "batchsampler"]},
            "gpu_masking": {"about": "the Dataset only cuts the window; the batch is masked "
                                     "on the GPU after the copy (the same bert_mask on "
                                     "device tensors)",
                            "code": "ids = next(batches)\ntrain(*bert_mask(ids.to(DEVICE)))",
                            "match": ["on the gpu", "gpu-side", "on the device"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 12},
    },
    "gpt_lm_fp32": {
        "about": "a GPT-style decoder-only LM (4 blocks, width 1024, 16 heads, SDPA causal "
                 "attention, vocab 32000, 512 tokens, batch 8) trained with AdamW and "
                 "clip_grad_norm_ in fp32 at torch's default matmul precision ('highest': "
                 "TF32 off)",
        "setup": """
torch.manual_seed(0)
if FIXED == 'tf32':
    torch.set_float32_matmul_precision('high')
V, D, NH, L, T, B = (64, 16, 2, 1, 8, 2) if DRY else (32000, 1024, 16, 4, 512, 8)
F = torch.nn.functional
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.fc, self.out = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)
    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, NH, D // NH).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate='tanh'))
class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = torch.nn.Embedding(V, D), torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(L)])
        self.ln_f = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, V, bias=False)
        self.register_buffer('positions', torch.arange(T))
    def forward(self, idx):
        x = self.wte(idx) + self.wpe(self.positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))
model = GPT().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
tokens = torch.randint(0, V, (4, B, T + 1), device=DEVICE)
seen = [0]
def next_batch():
    seen[0] += 1
    batch = tokens[seen[0] % 4]
    return batch[:, :-1], batch[:, 1:].reshape(-1)
""",
        "base": """
idx, targets = next_batch()
opt.zero_grad(set_to_none=True)
F.cross_entropy(model(idx).view(-1, V), targets).backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
opt.step()
""",
        "fixes": {
            "tf32": {"about": "torch.set_float32_matmul_precision('high') (TF32)",
                     "match": ["tf32", "matmul_precision", "float32_matmul"]},
            "bf16_autocast": {"about": "bf16 autocast around the forward and the loss",
                              "code": """
idx, targets = next_batch()
opt.zero_grad(set_to_none=True)
with torch.autocast(DEVICE, dtype=torch.bfloat16):
    loss = F.cross_entropy(model(idx).view(-1, V), targets)
loss.backward()
torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
opt.step()
""",
                              "match": ["bf16-autocast", "bf16", "bfloat16"]},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 6},
    },
}
