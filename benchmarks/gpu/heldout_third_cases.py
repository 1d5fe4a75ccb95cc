"""Four of ``heldout_third.py``'s held-out programs: training steps (a translation Transformer
in fp16 with a GradScaler, an R(2+1)D video classifier with cuDNN's autotuner off, a
deep-and-cross click model zeroing its gradients by hand, a protein residue tagger building
its attention biases on the host every step).

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it where one does. ``capture``
(``heldout_advice_fixes.CAPTURE``) is put before the setups that call it by
``heldout_third.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

ON_DEVICE = ["tensor-on-device", "device=", "on the device"]

CASES: dict[str, Case] = {
    "translation_fp16_scaler": {
        "about": "a translation Transformer (nn.Transformer, 3 encoder and 3 decoder layers, "
                 "width 512, 8 heads, a shared 16000-word vocabulary, 64 source and 64 target "
                 "tokens, batch 48, label smoothing 0.1) trained in fp16 autocast with "
                 "torch.amp.GradScaler (unscale_, clip_grad_norm_, step, update) and a plain "
                 "AdamW, whose scaler.step reads the inf check on the host each step",
        "setup": """
torch.manual_seed(0)
V, D, NH, L, S, T, B = (40, 16, 2, 1, 6, 5, 2) if DRY else (16000, 512, 8, 3, 64, 64, 48)
F = torch.nn.functional
class Translator(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.pos = torch.nn.Parameter(torch.randn(max(S, T), D) * 0.02)
        self.core = torch.nn.Transformer(D, NH, L, L, 4 * D, 0.1, batch_first=True)
        self.register_buffer('causal', torch.nn.Transformer.generate_square_subsequent_mask(T))
    def forward(self, src, tgt_in):
        memory_in = self.emb(src) * D ** 0.5 + self.pos[:S]
        h = self.core(memory_in, self.emb(tgt_in) * D ** 0.5 + self.pos[:T],
                      tgt_mask=self.causal, tgt_is_causal=True)
        return h @ self.emb.weight.T
model = Translator().to(DEVICE)
opt_kw = {'fused_adamw': dict(fused=True),
          'cuda_graph': dict(fused=CUDA, capturable=CUDA)}.get(FIXED, {})
opt = torch.optim.AdamW(model.parameters(), lr=5e-4, betas=(0.9, 0.98), weight_decay=0.01,
                        **opt_kw)
scaler = torch.amp.GradScaler(DEVICE)
pairs = [(torch.randint(3, V, (B, S), device=DEVICE), torch.randint(3, V, (B, T + 1),
                                                                    device=DEVICE))
         for _ in range(4)]
seen = [0]
def next_pair():
    seen[0] += 1
    src, tgt = pairs[seen[0] % 4]
    return src, tgt[:, :-1], tgt[:, 1:]
def loss_of(src, tgt_in, tgt_out):
    logits = model(src, tgt_in)
    return F.cross_entropy(logits.float().reshape(-1, V), tgt_out.reshape(-1),
                           label_smoothing=0.1)
def fp16_step(src, tgt_in, tgt_out):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.float16):
        loss = loss_of(src, tgt_in, tgt_out)
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(opt)
    scaler.update()
def bf16_step(src, tgt_in, tgt_out):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        loss = loss_of(src, tgt_in, tgt_out)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
static = [t.clone() for t in next_pair()]
graph_step = capture(lambda: bf16_step(*static)) if FIXED == 'cuda_graph' else None
""",
        "base": "fp16_step(*next_pair())",
        "fixes": {
            "bf16_no_scaler": {"about": "bf16 autocast, the GradScaler dropped (the loss "
                                        "backpropagated and the step taken directly)",
                               "code": "bf16_step(*next_pair())",
                               "match": ["bf16-autocast", "bf16", "bfloat16", "gradscaler"]},
            "fused_adamw": {"about": "AdamW(fused=True), the fp16 autocast and the scaler "
                                     "kept (the scaler hands the optimizer its inf flag on "
                                     "the device: no host read)",
                            "match": ["fused-optimizer", "fused=true", "fused adamw"]},
            "cuda_graph": {"about": "bf16 without the scaler, AdamW(fused, capturable), the "
                                    "whole step (zero_grad, forward, backward, clipping, "
                                    "update) captured once; each pair copied into static "
                                    "inputs, replayed",
                           "code": """
for buf, t in zip(static, next_pair()):
    buf.copy_(t)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 12},
    },
    "r2plus1d_clips_nchw": {
        "about": "an R(2+1)D action classifier (factorised (1,3,3) spatial and (3,1,1) "
                 "temporal Conv3d with BatchNorm, four residual stages of 32-256 channels, "
                 "101 classes) trained with SGD+Nesterov on clips of 8 frames at 96x96, "
                 "batch 16, fp32, torch.backends.cudnn.benchmark left False (the default) "
                 "and the default NCDHW layout",
        "setup": """
import contextlib
torch.manual_seed(0)
B, FR, R, W, K = (2, 2, 16, 4, 5) if DRY else (16, 8, 96, 32, 101)
torch.backends.cudnn.benchmark = FIXED == 'cudnn_benchmark'
LAYOUT = (torch.channels_last_3d if FIXED in ('channels_last', 'bf16_channels_last')
          else torch.contiguous_format)
F = torch.nn.functional
def conv2plus1d(cin, cout, stride):
    return torch.nn.Sequential(
        torch.nn.Conv3d(cin, cout, (1, 3, 3), (1, stride, stride), (0, 1, 1), bias=False),
        torch.nn.BatchNorm3d(cout), torch.nn.ReLU(inplace=True),
        torch.nn.Conv3d(cout, cout, (3, 1, 1), (stride, 1, 1), (1, 0, 0), bias=False))
class Block(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv2plus1d(cin, cout, stride)
        self.bn_a = torch.nn.BatchNorm3d(cout)
        self.b = conv2plus1d(cout, cout, 1)
        self.bn_b = torch.nn.BatchNorm3d(cout)
        self.skip = (torch.nn.Identity() if stride == 1 and cin == cout else
                     torch.nn.Sequential(torch.nn.Conv3d(cin, cout, 1, stride, bias=False),
                                         torch.nn.BatchNorm3d(cout)))
    def forward(self, x):
        h = F.relu(self.bn_a(self.a(x)))
        return F.relu(self.bn_b(self.b(h)) + self.skip(x))
class R2Plus1D(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv3d(3, W, (1, 7, 7), (1, 2, 2), (0, 3, 3), bias=False),
            torch.nn.BatchNorm3d(W), torch.nn.ReLU(inplace=True),
            torch.nn.Conv3d(W, W, (3, 1, 1), 1, (1, 0, 0), bias=False),
            torch.nn.BatchNorm3d(W), torch.nn.ReLU(inplace=True))
        self.stages = torch.nn.Sequential(Block(W, W, 1), Block(W, 2 * W, 2),
                                          Block(2 * W, 4 * W, 2), Block(4 * W, 8 * W, 2))
        self.fc = torch.nn.Linear(8 * W, K)
    def forward(self, clip):
        return self.fc(self.stages(self.stem(clip)).mean((2, 3, 4)))
model = R2Plus1D().to(DEVICE, memory_format=LAYOUT)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True,
                      weight_decay=1e-4)
clips = [torch.randn(B, 3, FR, R, R, device=DEVICE).contiguous(memory_format=LAYOUT)
         for _ in range(4)]
labels = torch.randint(0, K, (4, B), device=DEVICE)
seen = [0]
def train(dtype=None):
    seen[0] += 1
    clip, y = clips[seen[0] % 4], labels[seen[0] % 4]
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=dtype) if dtype else contextlib.nullcontext():
        loss = F.cross_entropy(model(clip), y, label_smoothing=0.1)
    loss.backward()
    opt.step()
""",
        "base": "train()",
        "fixes": {
            "cudnn_benchmark": {"about": "torch.backends.cudnn.benchmark = True (cuDNN times "
                                         "its algorithms for each new shape once)",
                                "match": ["cudnn.benchmark", "benchmark=true", "autotun"]},
            "channels_last": {"about": "model and clips in torch.channels_last_3d, fp32",
                              "match": ["channels-last", "channels_last"]},
            "bf16_channels_last": {"about": "bf16 autocast with the model and clips in "
                                            "channels_last_3d",
                                   "code": "train(torch.bfloat16)",
                                   "match": ["bf16-autocast", "bf16", "channels_last"]},
        },
        "timing": {"warmup": 6, "blocks": 5, "iters": 10},
    },
    "dcn_tables_zero_grad": {
        "about": "a deep-and-cross click model (DCN-v2: 13 dense features, 26 categorical "
                 "fields with their own Embedding tables of 1k-100k rows x 16, three full-rank "
                 "cross layers, a 512-256 MLP; batch 4096) trained with Adagrad(foreach=False) "
                 "over its 38 parameters (13.1M values), the gradients zeroed with "
                 "zero_grad(set_to_none=False) and the tables' zeroed again by hand in a loop",
        "setup": """
torch.manual_seed(0)
FIELDS, DIM, B = (3, 4, 16) if DRY else (26, 16, 4096)
ROWS = [50 + 10 * i for i in range(FIELDS)] if DRY else [
    (1000, 5000, 20000, 100000)[i % 4] for i in range(FIELDS)]
F = torch.nn.functional
class DCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = torch.nn.ModuleList([torch.nn.Embedding(n, DIM) for n in ROWS])
        width = 13 + FIELDS * DIM
        self.cross = torch.nn.ModuleList([torch.nn.Linear(width, width) for _ in range(3)])
        self.deep = torch.nn.Sequential(torch.nn.Linear(width, 512), torch.nn.ReLU(),
                                        torch.nn.Linear(512, 256), torch.nn.ReLU())
        self.out = torch.nn.Linear(width + 256, 1)
    def forward(self, dense, ids):
        x0 = torch.cat([dense] + [t(ids[:, j]) for j, t in enumerate(self.tables)], 1)
        x = x0
        for layer in self.cross:
            x = x0 * layer(x) + x
        return self.out(torch.cat([x, self.deep(x0)], 1)).squeeze(1)
model = DCN().to(DEVICE)
opt = torch.optim.Adagrad(model.parameters(), lr=0.01,
                          foreach=FIXED == 'foreach')
limits = torch.tensor(ROWS, device=DEVICE)
batches = [(torch.randn(B, 13, device=DEVICE),
            (torch.rand(B, FIELDS, device=DEVICE) * limits).long(),
            torch.randint(0, 2, (B,), device=DEVICE).float()) for _ in range(4)]
seen = [0]
def train(set_to_none):
    seen[0] += 1
    dense, ids, clicks = batches[seen[0] % 4]
    opt.zero_grad(set_to_none=set_to_none)
    if not set_to_none:  # kept from an older trainer: the tables' gradients cleared again
        for table in model.tables:
            if table.weight.grad is not None:
                table.weight.grad.zero_()
    F.binary_cross_entropy_with_logits(model(dense, ids), clicks).backward()
    opt.step()
""",
        "base": "train(False)",
        "fixes": {
            "set_to_none": {"about": "opt.zero_grad(set_to_none=True), the hand loop removed "
                                     "(Adagrad(foreach=False) kept)",
                            "code": "train(True)",
                            "match": ["zero-grad-none", "set_to_none"]},
            "foreach": {"about": "Adagrad(foreach=True), the zeroing as written",
                        "match": ["fused-optimizer", "foreach"]},
        },
    },
    "protein_host_alibi": {
        "about": "a protein residue tagger (6 pre-norm encoder layers, width 320, 8 heads, "
                 "25 amino-acid tokens, 512 residues padded, batch 16, bf16 autocast, AdamW, "
                 "3 secondary-structure classes) whose step builds the ALiBi distance bias "
                 "(8 x 512 x 512 fp32, 8.4 MB), the position ids and the padding mask from a "
                 "list of lengths on the host with torch.arange / torch.tensor, then .to(device)",
        "setup": """
torch.manual_seed(0)
A, D, NH, L, T, B, K = (25, 16, 2, 1, 12, 2, 3) if DRY else (25, 320, 8, 6, 512, 16, 3)
F = torch.nn.functional
slopes_host = torch.tensor([2.0 ** (-8 * (h + 1) / NH) for h in range(NH)])
class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.ff = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(),
                                      torch.nn.Linear(4 * D, D))
    def forward(self, x, bias):
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, NH, D // NH).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))
        x = x + self.proj(a.transpose(1, 2).reshape(B, T, D))
        return x + self.ff(self.ln2(x))
class Tagger(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.pos = torch.nn.Embedding(A, D, padding_idx=0), torch.nn.Embedding(T, D)
        self.layers = torch.nn.ModuleList([Layer() for _ in range(L)])
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, K)
    def forward(self, seqs, positions, bias):
        x = self.emb(seqs) + self.pos(positions)
        for layer in self.layers:
            x = layer(x, bias)
        return self.head(self.norm(x))
model = Tagger().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
batches = []
for _ in range(4):
    lengths = torch.randint(T // 4, T + 1, (B,)).tolist()
    seqs = torch.randint(1, A, (B, T))
    keep = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    seqs[~keep] = 0
    tags = torch.randint(0, K, (B, T)).masked_fill(~keep, -100)
    batches.append((seqs.to(DEVICE), tags.to(DEVICE), lengths,
                    torch.tensor(lengths, device=DEVICE)))
seen = [0]
def biases_host(lengths):
    positions = torch.arange(T)
    distance = (positions[None, :] - positions[:, None]).abs().float()
    alibi = -slopes_host[:, None, None] * distance
    pad = torch.arange(T)[None, :] >= torch.tensor(lengths)[:, None]
    pad_bias = torch.zeros(B, 1, 1, T).masked_fill(pad[:, None, None, :], float('-inf'))
    return positions.to(DEVICE), alibi.to(DEVICE)[None] + pad_bias.to(DEVICE)
slopes_dev = slopes_host.to(DEVICE)
def biases_on_device(lengths):
    positions = torch.arange(T, device=DEVICE)
    distance = (positions[None, :] - positions[:, None]).abs().float()
    alibi = -slopes_dev[:, None, None] * distance
    pad = positions[None, :] >= torch.tensor(lengths, device=DEVICE)[:, None]
    pad_bias = torch.zeros(B, 1, 1, T, device=DEVICE).masked_fill(pad[:, None, None, :],
                                                                  float('-inf'))
    return positions, alibi[None] + pad_bias
cached_positions = torch.arange(T, device=DEVICE)
cached_alibi = biases_on_device([T] * B)[1][:1]
def biases_cached(lengths_dev):
    pad = cached_positions[None, :] >= lengths_dev[:, None]
    pad_bias = torch.zeros_like(pad, dtype=torch.float32).masked_fill_(pad, float('-inf'))
    return cached_positions, cached_alibi + pad_bias[:, None, None, :]
def train(biases):
    seen[0] += 1
    seqs, tags, lengths, lengths_dev = batches[seen[0] % 4]
    positions, bias = biases(lengths_dev if biases is biases_cached else lengths)
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        logits = model(seqs, positions, bias.to(torch.bfloat16))
    F.cross_entropy(logits.float().view(-1, K), tags.view(-1), ignore_index=-100).backward()
    opt.step()
""",
        "base": "train(biases_host)",
        "fixes": {
            "on_device": {"about": "the same tensors created on the GPU (device= in arange, "
                                   "tensor and zeros; the slopes moved once)",
                          "code": "train(biases_on_device)",
                          "match": ON_DEVICE},
            "cached": {"about": "positions and the ALiBi bias made once on the GPU before "
                                "the loop; only the padding mask made per step, on the GPU "
                                "from lengths kept there with the batch",
                       "code": "train(biases_cached)",
                       "match": ["tensor-on-device", "cache", "before the loop", "once"]},
        },
        "timing": {"warmup": 6, "blocks": 5, "iters": 10},
    },
}
