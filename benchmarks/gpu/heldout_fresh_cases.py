"""Three of ``heldout_fresh.py``'s held-out programs: training steps (a DLRM click model with
pageable batches, a GraphSAGE network with mask syncs, a Conformer encoder in fp32).

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it. ``capture`` (``heldout_advice_fixes.CAPTURE``) is put
before the setups that call it by ``heldout_fresh.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

CASES: dict[str, Case] = {
    "dlrm_pageable_bags": {
        "about": "a DLRM-style click model (13 dense features, 12 EmbeddingBag tables of 100k "
                 "x 32 summing 16 ids a bag, bottom and top MLPs, pairwise dot interaction, "
                 "batch 8192) trained with Adam on batches held in pageable host memory "
                 "(12.6 MB of int64 ids a batch), each copied with .to(device)",
        "setup": """
torch.manual_seed(0)
T, ROWS, DIM, BAG, B = (3, 50, 4, 2, 8) if DRY else (12, 100_000, 32, 16, 8192)
F = torch.nn.functional
def mlp(sizes):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])
class DLRM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.bottom = mlp([13, 256, 64, DIM])
        self.tables = torch.nn.ModuleList(
            [torch.nn.EmbeddingBag(ROWS, DIM, mode='sum') for _ in range(T)])
        self.top = mlp([DIM + (T + 1) * T // 2, 256, 128, 1])
        self.register_buffer('pairs', torch.triu_indices(T + 1, T + 1, 1))
    def forward(self, dense, ids, offsets):
        feats = [self.bottom(dense)] + [t(ids[j], offsets) for j, t in enumerate(self.tables)]
        z = torch.stack(feats, 1)
        inter = torch.bmm(z, z.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return self.top(torch.cat([feats[0], inter], 1)).squeeze(1)
model = DLRM().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
offsets = torch.arange(0, B * BAG, BAG, device=DEVICE)
batches = [(torch.randn(B, 13), torch.randint(0, ROWS, (T, B * BAG)),
            torch.randint(0, 2, (B,)).float()) for _ in range(4)]
if FIXED == 'pinned_non_blocking' and CUDA:
    batches = [tuple(t.pin_memory() for t in batch) for batch in batches]
if FIXED == 'resident':
    batches = [tuple(t.to(DEVICE) for t in batch) for batch in batches]
seen = [0]
def next_batch():
    seen[0] += 1
    return batches[seen[0] % len(batches)]
def train(dense, ids, clicks):
    opt.zero_grad(set_to_none=True)
    F.binary_cross_entropy_with_logits(model(dense, ids, offsets), clicks).backward()
    opt.step()
""",
        "base": """
dense, ids, clicks = next_batch()
train(dense.to(DEVICE), ids.to(DEVICE), clicks.to(DEVICE))
""",
        "fixes": {
            "pinned_non_blocking": {
                "about": "the host batches pinned once, copied with .to(device, "
                         "non_blocking=True)",
                "code": """
dense, ids, clicks = next_batch()
train(dense.to(DEVICE, non_blocking=True), ids.to(DEVICE, non_blocking=True),
      clicks.to(DEVICE, non_blocking=True))
""",
                "match": ["pin-memory", "pin_memory", "pinned", "non_blocking"]},
            "resident": {"about": "the four batches moved to the GPU once, before the loop "
                                  "(each .to(device) then a no-op)",
                         "match": ["tensor-on-device", "before the loop"]},
        },
    },
    "sage_dropedge_mask": {
        "about": "a 2-layer GraphSAGE (mean aggregation by index_add_, 20k nodes, 160k edges, "
                 "64 features, 16 classes) trained full-graph with Adam; each step drops "
                 "edges with a boolean mask (src[keep]) and finds the training nodes with "
                 "torch.nonzero: two syncs on the counts",
        "setup": """
torch.manual_seed(0)
N, E, D, H, K = (64, 256, 8, 8, 4) if DRY else (20000, 160000, 64, 64, 16)
F = torch.nn.functional
src = torch.randint(0, N, (E,), device=DEVICE)
dst = torch.randint(0, N, (E,), device=DEVICE)
feats = torch.randn(N, D, device=DEVICE)
labels = torch.randint(0, K, (N,), device=DEVICE)
train_mask = torch.rand(N, device=DEVICE) < 0.3
TRAIN_IDX = torch.nonzero(train_mask).squeeze(1)
class SAGELayer(torch.nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.self_lin = torch.nn.Linear(din, dout)
        self.neigh_lin = torch.nn.Linear(din, dout, bias=False)
    def forward(self, h, s, d, w):
        msg = h.index_select(0, s)
        ones = torch.ones(s.shape[0], device=h.device)
        if w is not None:
            msg, ones = msg * w[:, None], w
        agg = torch.zeros(h.shape[0], msg.shape[1], device=h.device).index_add_(0, d, msg)
        deg = torch.zeros(h.shape[0], device=h.device).index_add_(0, d, ones)
        return self.self_lin(h) + self.neigh_lin(agg / deg.clamp(min=1)[:, None])
class SAGE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = SAGELayer(D, H), SAGELayer(H, K)
    def forward(self, s, d, w=None):
        h = F.dropout(F.relu(self.l1(feats, s, d, w)), 0.5, self.training)
        return self.l2(h, s, d, w)
model = SAGE().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4,
                       capturable=CUDA and FIXED == 'cuda_graph')
def weighted_step():
    w = (torch.rand(E, device=DEVICE) >= 0.2).float()
    opt.zero_grad(set_to_none=True)
    out = model(src, dst, w)
    F.cross_entropy(out.index_select(0, TRAIN_IDX), labels.index_select(0, TRAIN_IDX)).backward()
    opt.step()
graph_step = capture(weighted_step) if FIXED == 'cuda_graph' else None
""",
        "base": """
keep = torch.rand(E, device=DEVICE) >= 0.2
idx = torch.nonzero(train_mask).squeeze(1)
opt.zero_grad(set_to_none=True)
out = model(src[keep], dst[keep])
F.cross_entropy(out.index_select(0, idx), labels.index_select(0, idx)).backward()
opt.step()
""",
        "fixes": {
            "remove_sync": {"about": "the dropped edges weighted 0 (a 0/1 weight on each "
                                     "message and degree, no boolean index), the training "
                                     "nodes found once before the loop",
                            "code": "weighted_step()",
                            "match": ["remove-sync", "nonzero", "boolean mask"]},
            "cuda_graph": {"about": "remove_sync's step captured once (Adam capturable), "
                                    "replayed: capture refuses the two syncs",
                           "code": "graph_step()", "match": GRAPH_MATCH},
        },
    },
    "conformer_fp32_highest": {
        "about": "a 4-block Conformer encoder (80 mels x 1024 frames subsampled 4x by two "
                 "strided Conv1d, width 256, 4 heads, depthwise conv 31, macaron FFNs, batch "
                 "32) trained on frame labels with AdamW in fp32 at matmul precision "
                 "'highest' (TF32 off, torch's default)",
        "setup": """
torch.manual_seed(0)
torch.set_float32_matmul_precision('high' if FIXED == 'tf32' else 'highest')
M, T, D, NH, L, B, K = (8, 32, 16, 2, 1, 2, 5) if DRY else (80, 1024, 256, 4, 4, 32, 40)
F = torch.nn.functional
def feed_forward():
    return torch.nn.Sequential(torch.nn.LayerNorm(D), torch.nn.Linear(D, 4 * D),
                               torch.nn.SiLU(), torch.nn.Dropout(0.1),
                               torch.nn.Linear(4 * D, D), torch.nn.Dropout(0.1))
class ConvModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(D)
        self.pw1, self.pw2 = torch.nn.Conv1d(D, 2 * D, 1), torch.nn.Conv1d(D, D, 1)
        self.dw = torch.nn.Conv1d(D, D, 31, padding=15, groups=D)
        self.bn = torch.nn.BatchNorm1d(D)
    def forward(self, x):
        h = F.glu(self.pw1(self.norm(x).transpose(1, 2)), dim=1)
        return self.pw2(F.silu(self.bn(self.dw(h)))).transpose(1, 2)
class ConformerBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ff1, self.ff2 = feed_forward(), feed_forward()
        self.attn_norm, self.out_norm = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.attn = torch.nn.MultiheadAttention(D, NH, dropout=0.1, batch_first=True)
        self.conv = ConvModule()
    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        h = self.attn_norm(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        x = x + self.conv(x)
        return self.out_norm(x + 0.5 * self.ff2(x))
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.subsample = torch.nn.Sequential(
            torch.nn.Conv1d(M, D, 3, stride=2, padding=1), torch.nn.SiLU(),
            torch.nn.Conv1d(D, D, 3, stride=2, padding=1), torch.nn.SiLU())
        self.blocks = torch.nn.Sequential(*[ConformerBlock() for _ in range(L)])
        self.head = torch.nn.Linear(D, K)
    def forward(self, mels):
        x = self.subsample(mels.transpose(1, 2)).transpose(1, 2)
        return self.head(self.blocks(x))
model = Encoder().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
mels = torch.randn(4, B, T, M, device=DEVICE)
frame_labels = torch.randint(0, K, (4, B, T // 4), device=DEVICE)
seen = [0]
""",
        "base": """
seen[0] += 1
k = seen[0] % 4
opt.zero_grad(set_to_none=True)
logits = model(mels[k])
F.cross_entropy(logits.reshape(-1, K), frame_labels[k].reshape(-1)).backward()
opt.step()
""",
        "fixes": {
            "tf32": {"about": "torch.set_float32_matmul_precision('high') (TF32)",
                     "match": ["tf32", "matmul_precision", "float32_matmul"]},
            "bf16_autocast": {"about": "bf16 autocast around the forward and the loss",
                              "code": """
seen[0] += 1
k = seen[0] % 4
opt.zero_grad(set_to_none=True)
with torch.autocast(DEVICE, dtype=torch.bfloat16):
    logits = model(mels[k])
    loss = F.cross_entropy(logits.reshape(-1, K), frame_labels[k].reshape(-1))
loss.backward()
opt.step()
""",
                              "match": ["bf16-autocast", "bf16", "bfloat16"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 8},
    },
}
