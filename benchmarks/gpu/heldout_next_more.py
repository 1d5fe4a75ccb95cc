"""Four of ``heldout_next.py``'s held-out programs: a U-Net step that logs its metrics with
syncs, a LoRA fine-tune with AdamW(foreach=False), a joint intent/slot model served at batch
1 with autograd on, and a hand-written QK-norm and rotary embedding on long sequences.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it where one does. ``capture``
(``heldout_advice_fixes.CAPTURE``) is put before the setups that call it by
``heldout_next.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

INFERENCE = ["inference-mode", "inference_mode", "no_grad"]

MORE: dict[str, Case] = {
    "unet_logged_metrics": {
        "about": "a small U-Net (3 levels, 16-64 channels, BatchNorm) trained on 96x96 "
                 "single-channel scans, batch 16, with BCE + soft Dice, clip_grad_norm_ and "
                 "Adam, logging the BCE, Dice, grad norm and IoU with .item() / .cpu() and a "
                 "NaN check after every step",
        "setup": """
import math
torch.manual_seed(0)
R, B, W = (16, 2, 4) if DRY else (96, 16, 16)
F = torch.nn.functional
def double_conv(cin, cout):
    return torch.nn.Sequential(
        torch.nn.Conv2d(cin, cout, 3, padding=1, bias=False), torch.nn.BatchNorm2d(cout),
        torch.nn.ReLU(inplace=True), torch.nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))
class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.d1, self.d2 = double_conv(1, W), double_conv(W, 2 * W)
        self.d3 = double_conv(2 * W, 4 * W)
        self.up2 = torch.nn.ConvTranspose2d(4 * W, 2 * W, 2, stride=2)
        self.u2 = double_conv(4 * W, 2 * W)
        self.up1 = torch.nn.ConvTranspose2d(2 * W, W, 2, stride=2)
        self.u1 = double_conv(2 * W, W)
        self.out = torch.nn.Conv2d(W, 1, 1)
    def forward(self, x):
        s1 = self.d1(x)
        s2 = self.d2(F.max_pool2d(s1, 2))
        h = self.d3(F.max_pool2d(s2, 2))
        h = self.u2(torch.cat([self.up2(h), s2], 1))
        return self.out(self.u1(torch.cat([self.up1(h), s1], 1)))
model = UNet().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=CUDA and FIXED == 'cuda_graph')
scans = torch.randn(8, B, 1, R, R, device=DEVICE)
masks = (torch.rand(8, B, 1, R, R, device=DEVICE) > 0.7).float()
seen, history = [0], []
running = torch.zeros(4, device=DEVICE)
def next_batch():
    seen[0] += 1
    return scans[seen[0] % 8], masks[seen[0] % 8]
def soft_dice(logits, target):
    p = logits.sigmoid()
    inter = (p * target).sum((1, 2, 3))
    return 1 - ((2 * inter + 1) / (p.sum((1, 2, 3)) + target.sum((1, 2, 3)) + 1)).mean()
def step(x, y):
    opt.zero_grad(set_to_none=True)
    logits = model(x)
    bce = F.binary_cross_entropy_with_logits(logits, y)
    dice = soft_dice(logits, y)
    (bce + dice).backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    with torch.no_grad():
        pred, truth = logits > 0, y > 0.5
        iou = (pred & truth).sum() / (pred | truth).sum().clamp(min=1)
    return bce.detach(), dice.detach(), grad_norm, iou
def log_every(every, bce, dice, grad_norm, iou):
    if seen[0] % every:
        return
    if not math.isfinite(bce.item()):
        raise FloatingPointError('loss is not finite')
    history.append({'bce': bce.item(), 'dice': dice.item(), 'grad_norm': grad_norm.item(),
                    'iou': iou.cpu()})
    del history[:-100]
static_x, static_y = scans[0].clone(), masks[0].clone()
def quiet_step():
    running.add_(torch.stack(step(static_x, static_y)))
graph_step = capture(quiet_step) if FIXED == 'cuda_graph' else None
""",
        "base": "log_every(1, *step(*next_batch()))",
        "fixes": {
            "remove_sync": {"about": "the metrics summed on the device (running.add_), read "
                                     "once after training; no per-step NaN check",
                            "code": "running.add_(torch.stack(step(*next_batch())))",
                            "match": ["remove-sync", ".item()", "on the device"]},
            "log_every_25": {"about": "the same logging and NaN check, every 25 steps",
                             "code": "log_every(25, *step(*next_batch()))",
                             "match": ["remove-sync", "every n", "log less", ".item()"]},
            "cuda_graph": {"about": "the step with its metrics summed on the device captured "
                                    "once (Adam capturable), each batch copied into static "
                                    "inputs, replayed",
                           "code": """
x, y = next_batch()
static_x.copy_(x)
static_y.copy_(y)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 10, "blocks": 5, "iters": 40},
    },
    "lora_adamw_foreach_false": {
        "about": "LoRA fine-tuning of a frozen 8-layer encoder classifier (width 512, 8 heads, "
                 "128 tokens, batch 16, bf16 autocast): rank-8 adapters on q, k, v, o and both "
                 "MLP projections plus the LayerNorms and the head trained (132 small "
                 "tensors) with AdamW(foreach=False)",
        "setup": """
torch.manual_seed(0)
V, D, L, NH, T, B, RANK, K = ((50, 16, 2, 2, 8, 2, 2, 3) if DRY
                              else (16000, 512, 8, 8, 128, 16, 8, 4))
F = torch.nn.functional
class LoRALinear(torch.nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.base = torch.nn.Linear(din, dout).requires_grad_(False)
        self.lora_a = torch.nn.Parameter(torch.randn(RANK, din) / din ** 0.5)
        self.lora_b = torch.nn.Parameter(torch.zeros(dout, RANK))
    def forward(self, x):
        return self.base(x) + F.linear(F.linear(x, self.lora_a), self.lora_b) * (16 / RANK)
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.q, self.k, self.v, self.o = (LoRALinear(D, D) for _ in range(4))
        self.fc1, self.fc2 = LoRALinear(D, 4 * D), LoRALinear(4 * D, D)
    def heads(self, t):
        return t.view(B, T, NH, D // NH).transpose(1, 2)
    def forward(self, x):
        h = self.ln1(x)
        a = F.scaled_dot_product_attention(self.heads(self.q(h)), self.heads(self.k(h)),
                                           self.heads(self.v(h)))
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D).requires_grad_(False)
        self.pos = torch.nn.Parameter(torch.randn(1, T, D) * 0.02, requires_grad=False)
        self.blocks = torch.nn.Sequential(*[Block() for _ in range(L)])
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, K)
    def forward(self, ids):
        return self.head(self.norm(self.blocks(self.emb(ids) + self.pos)).mean(1))
model = Classifier().to(DEVICE)
trainable = [p for p in model.parameters() if p.requires_grad]
kw = {'foreach': dict(foreach=True), 'fused': dict(fused=CUDA),
      'cuda_graph': dict(foreach=False, capturable=CUDA)}
opt = torch.optim.AdamW(trainable, lr=2e-4, weight_decay=0.01,
                        **kw.get(FIXED, dict(foreach=False)))
data = [(torch.randint(0, V, (B, T), device=DEVICE), torch.randint(0, K, (B,), device=DEVICE))
        for _ in range(8)]
seen = [0]
def next_batch():
    seen[0] += 1
    return data[seen[0] % 8]
def step(ids, y):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(ids), y)
    loss.backward()
    opt.step()
static = [t.clone() for t in data[0]]
graph_step = capture(lambda: step(*static)) if FIXED == 'cuda_graph' else None
""",
        "base": "step(*next_batch())",
        "fixes": {
            "foreach": {"about": "AdamW(foreach=True): one multi-tensor kernel per update "
                                 "stage over all the adapters",
                        "match": ["fused-optimizer", "foreach"]},
            "fused": {"about": "AdamW(fused=True)",
                      "match": ["fused-optimizer", "fused=true", "fused adamw",
                                "fused optimizer"]},
            "cuda_graph": {"about": "the whole step captured once (AdamW capturable, "
                                    "foreach=False kept), each batch copied into static "
                                    "inputs, replayed",
                           "code": """
for buf, t in zip(static, next_batch()):
    buf.copy_(t)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
    },
    "nlu_batch1_grad": {
        "about": "a joint intent and slot-filling model (4 pre-norm encoder blocks, width "
                 "256, 4 heads, vocab 12000, 24 padded tokens, 40 intents, 90 slot tags) "
                 "serving one utterance at a time with autograd on (eval(), no no_grad)",
        "setup": """
torch.manual_seed(0)
V, D, NH, L, T, INTENTS, SLOTS = ((60, 16, 2, 1, 6, 4, 5) if DRY
                                  else (12000, 256, 4, 4, 24, 40, 90))
F = torch.nn.functional
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.ff = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(),
                                      torch.nn.Linear(4 * D, D))
    def forward(self, x, keep):
        n = x.shape[1]
        q, k, v = self.qkv(self.ln1(x)).view(1, n, 3, NH, D // NH).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        x = x + self.proj(a.transpose(1, 2).reshape(1, n, D))
        return x + self.ff(self.ln2(x))
class JointNLU(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.pos = torch.nn.Embedding(V, D, padding_idx=0), torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(L)])
        self.norm = torch.nn.LayerNorm(D)
        self.intent, self.slots = torch.nn.Linear(D, INTENTS), torch.nn.Linear(D, SLOTS)
        self.register_buffer('positions', torch.arange(T))
    def forward(self, ids):
        keep = (ids != 0)[:, None, None, :]
        x = self.emb(ids) + self.pos(self.positions)
        for block in self.blocks:
            x = block(x, keep)
        h = self.norm(x)
        tokens = keep[:, 0, 0, :, None]
        pooled = (h * tokens).sum(1) / tokens.sum(1)
        return self.intent(pooled), self.slots(h)
model = JointNLU().to(DEVICE).eval()
lengths = torch.randint(T // 3, T + 1, (16,))
utterances = torch.randint(1, V, (16, 1, T))
utterances[torch.arange(T) >= lengths[:, None, None]] = 0
utterances = utterances.to(DEVICE)
seen, replies = [0], []
def next_utterance():
    seen[0] += 1
    return utterances[seen[0] % 16]
def understand(ids):
    intent_logits, slot_logits = model(ids)
    return intent_logits.argmax(-1), slot_logits.argmax(-1).masked_fill(ids == 0, -1)
static_ids = utterances[0].clone()
static_out = []
def _graphed():
    static_out[:] = understand(static_ids)
replay = None
if FIXED == 'cuda_graph':
    with torch.no_grad():
        replay = capture(_graphed)
""",
        "base": "replies.append(understand(next_utterance()))\ndel replies[:-8]",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the call",
                               "code": """
with torch.inference_mode():
    replies.append(understand(next_utterance()))
del replies[:-8]
""",
                               "match": INFERENCE},
            "cuda_graph": {"about": "the call captured once under no_grad (the utterance "
                                    "copied into a static input, the outputs cloned) and "
                                    "replayed",
                           "code": """
static_ids.copy_(next_utterance())
replay()
replies.append(tuple(t.clone() for t in static_out))
del replies[:-8]
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 20, "blocks": 5, "iters": 100},
    },
    "qk_norm_rope_fp32": {
        "about": "the query/key preparation of a long-context attention prefill (batch 8, 16 "
                 "heads, 2048 tokens, head dim 128, fp32): RMSNorm written by hand (pow, "
                 "mean, rsqrt, two products), rotary embedding with rotate_half (chunk, neg, "
                 "cat) and the softmax scale, each a full-size temporary (134 MB a tensor)",
        "setup": """
torch.manual_seed(0)
B, H, T, HD = (1, 2, 16, 8) if DRY else (8, 16, 2048, 128)
HALF, SCALE = HD // 2, HD ** -0.5
DTYPE = torch.bfloat16 if FIXED == 'bf16_storage' else torch.float32
F = torch.nn.functional
inv_freq = 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD))
angles = torch.outer(torch.arange(T).float(), inv_freq)
cos = torch.cat([angles.cos(), angles.cos()], -1).to(DEVICE, DTYPE)
sin = torch.cat([angles.sin(), angles.sin()], -1).to(DEVICE, DTYPE)
cos_h, sin_h = cos[:, :HALF].contiguous(), sin[:, :HALF].contiguous()
q_norm_w = (1 + 0.1 * torch.randn(HD)).to(DEVICE, DTYPE)
k_norm_w = (1 + 0.1 * torch.randn(HD)).to(DEVICE, DTYPE)
q_w_scaled = q_norm_w * SCALE
qs = [torch.randn(B, H, T, HD, device=DEVICE, dtype=DTYPE) for _ in range(2)]
ks = [torch.randn(B, H, T, HD, device=DEVICE, dtype=DTYPE) for _ in range(2)]
seen, prepared = [0], []
def rms_norm(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w
def rotate_half(x):
    x1, x2 = x.chunk(2, -1)
    return torch.cat((-x2, x1), -1)
def apply_rope(x):
    return x * cos + rotate_half(x) * sin
def prepare(q, k):
    return apply_rope(rms_norm(q, q_norm_w)) * SCALE, apply_rope(rms_norm(k, k_norm_w))
def prepare_builtin(q, k):
    q = F.rms_norm(q, (HD,), q_norm_w, eps=1e-6)
    return apply_rope(q) * SCALE, apply_rope(F.rms_norm(k, (HD,), k_norm_w, eps=1e-6))
def rms_norm_lean(x, w, eps=1e-6):
    inv = torch.linalg.vector_norm(x, dim=-1, keepdim=True).mul_(HD ** -0.5)
    return x.mul(inv.square_().add_(eps).rsqrt_()).mul_(w)
def rope_lean(x):
    out = torch.empty_like(x)
    x1, x2 = x[..., :HALF], x[..., HALF:]
    lo, hi = out[..., :HALF], out[..., HALF:]
    torch.mul(x1, cos_h, out=lo).addcmul_(x2, sin_h, value=-1)
    torch.mul(x2, cos_h, out=hi).addcmul_(x1, sin_h)
    return out
def prepare_lean(q, k):
    return rope_lean(rms_norm_lean(q, q_w_scaled)), rope_lean(rms_norm_lean(k, k_norm_w))
def next_pair():
    seen[0] += 1
    return qs[seen[0] % 2], ks[seen[0] % 2]
""",
        "base": "prepared.append(prepare(*next_pair()))\ndel prepared[:-2]",
        "fixes": {
            "fewer_temporaries": {
                "about": "RMSNorm from one vector_norm and in-place products, the scale "
                         "folded into q's norm weight, rotary written into one output by "
                         "halves with mul(out=) and addcmul_ (no cat, no negated copy)",
                "code": "prepared.append(prepare_lean(*next_pair()))\ndel prepared[:-2]",
                "match": ["in-place", "temporar", "elementwise", "fuse"]},
            "builtin_rms_norm": {"about": "F.rms_norm instead of the hand-written RMSNorm "
                                          "(rotary as written)",
                                 "code": "prepared.append(prepare_builtin(*next_pair()))\n"
                                         "del prepared[:-2]",
                                 "match": ["rms_norm", "fuse", "elementwise"]},
            "bf16_storage": {"about": "q, k, the rotary tables and the norm weights held in "
                                      "bf16 (the code as written): half the bytes a pass",
                             "match": ["bf16", "bfloat16", "half the bytes"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 20},
    },
}
