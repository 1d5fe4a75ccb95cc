"""Four of ``heldout_fourth.py``'s held-out programs: training steps (a LLaMA-style decoder in
fp32 with its RMSNorm, rotary embedding and SwiGLU written by hand, a road-scene segmenter
whose focal and dice losses are written pointwise and logged with ``.item()``, a speaker
encoder whose GE2E loss loops over speakers and utterances in Python, a CTC speech model fed
16-bit PCM from pageable host memory).

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it where one does. ``capture``
(``heldout_advice_fixes.CAPTURE``) is put before the setups that call it by
``heldout_fourth.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

FUSE = ["fuse-elementwise", "torch.compile", "fuse", "elementwise"]

CASES: dict[str, Case] = {
    "llama_rope_rmsnorm_fp32": {
        "about": "a LLaMA-style decoder (4 layers, width 512, 8 heads, SwiGLU of 1408, "
                 "vocab 8192, batch 4 of 512 tokens) trained in fp32 with AdamW, TF32 off "
                 "(the default), its RMSNorm, rotary embedding and SwiGLU written by hand "
                 "as chains of pointwise ops (about 30 elementwise kernels a layer forward)",
        "setup": """
import contextlib
torch.manual_seed(0)
V, D, NH, L, FF, T, B = (64, 16, 2, 1, 24, 8, 2) if DRY else (8192, 512, 8, 4, 1408, 512, 4)
HD = D // NH
F = torch.nn.functional
torch.backends.cuda.matmul.allow_tf32 = FIXED == 'tf32'
def rms_norm_by_hand(x, weight, eps=1e-6):
    x32 = x.float()
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps)).type_as(x)
def rotate_half(x):
    x1, x2 = x[..., : HD // 2], x[..., HD // 2:]
    return torch.cat((-x2, x1), dim=-1)
def rope_by_hand(q, k, cos, sin):
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
def swiglu_by_hand(gate, up):
    return gate * (1.0 / (1.0 + torch.exp(-gate))) * up
def rms_norm_fused(x, weight, eps=1e-6):
    return F.rms_norm(x, (D,), weight, eps)
def swiglu_fused(gate, up):
    return F.silu(gate) * up
def compiled(fn):
    return torch.compile(fn, backend='inductor' if CUDA else 'eager')
NORM, ROPE, GLU = rms_norm_by_hand, rope_by_hand, swiglu_by_hand
if FIXED == 'compile_pointwise':
    NORM, ROPE, GLU = compiled(rms_norm_by_hand), compiled(rope_by_hand), compiled(swiglu_by_hand)
elif FIXED == 'fused_ops':
    NORM, GLU = rms_norm_fused, swiglu_fused
inv_freq = 1.0 / (10000 ** (torch.arange(0, HD, 2, device=DEVICE).float() / HD))
angles = torch.outer(torch.arange(T, device=DEVICE).float(), inv_freq)
COS, SIN = torch.cat((angles, angles), -1).cos(), torch.cat((angles, angles), -1).sin()
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(D)), torch.nn.Parameter(torch.ones(D))
        self.qkv, self.o = torch.nn.Linear(D, 3 * D, bias=False), torch.nn.Linear(D, D, bias=False)
        self.gate_up = torch.nn.Linear(D, 2 * FF, bias=False)
        self.down = torch.nn.Linear(FF, D, bias=False)
    def forward(self, x):
        q, k, v = self.qkv(NORM(x, self.n1)).view(B, T, 3, NH, HD).permute(2, 0, 3, 1, 4)
        q, k = ROPE(q, k, COS, SIN)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        gate, up = self.gate_up(NORM(x, self.n2)).chunk(2, -1)
        return x + self.down(GLU(gate, up))
class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(L)])
        self.norm = torch.nn.Parameter(torch.ones(D))
        self.lm_head = torch.nn.Linear(D, V, bias=False)
    def forward(self, ids):
        x = self.emb(ids)
        for block in self.blocks:
            x = block(x)
        return self.lm_head(NORM(x, self.norm))
model = Decoder().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.1)
tokens = [torch.randint(0, V, (B, T + 1), device=DEVICE) for _ in range(4)]
seen = [0]
def train(dtype=None):
    seen[0] += 1
    ids = tokens[seen[0] % 4]
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=dtype) if dtype else contextlib.nullcontext():
        logits = model(ids[:, :-1])
    F.cross_entropy(logits.float().reshape(-1, V), ids[:, 1:].reshape(-1)).backward()
    opt.step()
""",
        "base": "train()",
        "fixes": {
            "compile_pointwise": {"about": "the hand-written RMSNorm, rotary and SwiGLU "
                                           "functions each wrapped in torch.compile (one "
                                           "fused kernel each way), fp32 kept",
                                  "match": FUSE},
            "fused_ops": {"about": "F.rms_norm and F.silu(gate) * up in place of the hand "
                                   "chains (rotary as written), fp32 kept",
                          "match": ["fuse-elementwise", "rms_norm", "f.silu", "fused"]},
            "tf32": {"about": "torch.backends.cuda.matmul.allow_tf32 = True, the model as "
                              "written",
                     "match": ["tf32", "allow_tf32", "set_float32_matmul_precision"]},
            "bf16_autocast": {"about": "bf16 autocast around the forward, the hand chains "
                                       "as written (the norm upcasts to fp32 inside)",
                              "code": "train(torch.bfloat16)",
                              "match": ["bf16-autocast", "bf16", "bfloat16"]},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 10},
    },
    "roadseg_focal_dice_items": {
        "about": "a road-scene segmenter (a 4-stage strided conv encoder of 32-256 channels "
                 "with a light FPN decoder, 19 classes, logits upsampled to 384x384, batch "
                 "8, bf16 autocast for the network) trained with SGD on a multi-label "
                 "sigmoid focal loss plus a soft dice loss written as about 25 fp32 "
                 "pointwise ops over the 22M-value logits, the two losses and the pixel "
                 "accuracy read with .item() each step for the progress bar",
        "setup": """
torch.manual_seed(0)
B, K, R, W = (2, 3, 32, 4) if DRY else (8, 19, 384, 32)
ALPHA, GAMMA, EPS = 0.25, 2.0, 1e-6
F = torch.nn.functional
def block(cin, cout, stride):
    return torch.nn.Sequential(torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False),
                               torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True))
class RoadSeg(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.ModuleList([block(3, W, 2), block(W, 2 * W, 2),
                                        block(2 * W, 4 * W, 2), block(4 * W, 8 * W, 2)])
        self.lat = torch.nn.ModuleList([torch.nn.Conv2d(c, 64, 1) for c in
                                        (W, 2 * W, 4 * W, 8 * W)])
        self.head = torch.nn.Sequential(block(64, 64, 1), torch.nn.Conv2d(64, K, 1))
    def forward(self, x):
        feats = []
        for stage in self.enc:
            x = stage(x)
            feats.append(x)
        y = self.lat[3](feats[3])
        for i in (2, 1, 0):
            y = F.interpolate(y, scale_factor=2.0, mode='nearest') + self.lat[i](feats[i])
        return F.interpolate(self.head(y), size=(R, R), mode='bilinear', align_corners=False)
model = RoadSeg().to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
batches = [(torch.randn(B, 3, R, R, device=DEVICE),
            (torch.rand(B, K, R, R, device=DEVICE) < 0.1).float()) for _ in range(4)]
def focal_dice_by_hand(logits, target):
    p = 1.0 / (1.0 + torch.exp(-logits))
    ce = -(target * torch.log(p + EPS) + (1 - target) * torch.log(1 - p + EPS))
    p_t = p * target + (1 - p) * (1 - target)
    alpha_t = ALPHA * target + (1 - ALPHA) * (1 - target)
    focal = (alpha_t * (1 - p_t) ** GAMMA * ce).mean()
    inter = (p * target).sum((2, 3))
    dice = 1 - ((2 * inter + 1) / (p.sum((2, 3)) + target.sum((2, 3)) + 1)).mean()
    return focal, dice, p
def focal_dice_library(logits, target):
    p = torch.sigmoid(logits)
    ce = F.binary_cross_entropy_with_logits(logits, target, reduction='none')
    p_t = torch.where(target > 0.5, p, 1 - p)
    alpha_t = torch.where(target > 0.5, ALPHA, 1 - ALPHA)
    focal = (alpha_t * (1 - p_t).square() * ce).mean()
    inter = (p * target).sum((2, 3))
    dice = 1 - ((2 * inter + 1) / (p.sum((2, 3)) + target.sum((2, 3)) + 1)).mean()
    return focal, dice, p
LOSS = {'compile_loss': torch.compile(focal_dice_by_hand, backend='inductor' if CUDA
                                      else 'eager'),
        'library_loss': focal_dice_library}.get(FIXED, focal_dice_by_hand)
seen, bar = [0], []
acc_sum = torch.zeros((), device=DEVICE)
def train(log_every):
    seen[0] += 1
    images, target = batches[seen[0] % 4]
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        logits = model(images)
    focal, dice, p = LOSS(logits.float(), target)
    (focal + dice).backward()
    opt.step()
    acc = ((p > 0.5) == (target > 0.5)).float().mean()
    if log_every == 1:
        bar.append(f'focal {focal.item():.4f} dice {dice.item():.4f} acc {acc.item():.3f}')
    else:
        acc_sum.add_(acc.detach())
        if seen[0] % log_every == 0:
            bar.append(f'focal {focal.item():.4f} acc {acc_sum.item() / log_every:.3f}')
            acc_sum.zero_()
    del bar[:-10]
""",
        "base": "train(1)",
        "fixes": {
            "compile_loss": {"about": "the focal-and-dice loss function wrapped in "
                                     "torch.compile (the pointwise chain fused forward and "
                                     "backward); logging as written",
                             "match": FUSE},
            "library_loss": {"about": "the cross-entropy from F.binary_cross_entropy_with_"
                                      "logits, torch.sigmoid, torch.where for p_t and alpha_t "
                                      "(fewer pointwise kernels); logging as written",
                             "match": ["fuse-elementwise", "binary_cross_entropy_with_logits",
                                       "fused", "library"]},
            "log_every_50": {"about": "accuracy summed on the device, the bar updated with "
                                      ".item() every 50 steps; the loss as written",
                             "code": "train(50)",
                             "match": ["remove-sync", ".item()", "every n", "on the device"]},
        },
        "timing": {"warmup": 6, "blocks": 5, "iters": 10},
    },
    "ge2e_speaker_loop": {
        "about": "a speaker-verification encoder (an x-vector TDNN: 5 dilated Conv1d layers "
                 "of 512 over 40 log-mel bins and 200 frames, mean and std pooling, a 256-d "
                 "embedding; batch of 32 speakers x 8 utterances) "
                 "trained with SGD on the GE2E softmax loss written as in its paper: a "
                 "Python loop over speakers and utterances building each exclusive centroid "
                 "and its cosine row (about 6 small ops per utterance, 256 utterances)",
        "setup": """
torch.manual_seed(0)
N, M, MEL, FR, C, H = (3, 2, 4, 24, 8, 8) if DRY else (32, 8, 40, 200, 512, 256)
F = torch.nn.functional
class SpeakerEncoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        layers, cin = [], MEL
        for k, d in ((5, 1), (3, 2), (3, 3), (1, 1), (1, 1)):
            layers += [torch.nn.Conv1d(cin, C, k, dilation=d), torch.nn.ReLU(),
                       torch.nn.BatchNorm1d(C)]
            cin = C
        self.tdnn = torch.nn.Sequential(*layers)
        self.proj = torch.nn.Linear(2 * C, H)
        self.w = torch.nn.Parameter(torch.tensor(10.0))
        self.b = torch.nn.Parameter(torch.tensor(-5.0))
    def forward(self, mels):
        h = self.tdnn(mels)
        stats = torch.cat([h.mean(-1), h.std(-1)], 1)
        return F.normalize(self.proj(stats), dim=-1).view(N, M, H)
model = SpeakerEncoder().to(DEVICE)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
batches = [torch.randn(N * M, MEL, FR, device=DEVICE) for _ in range(4)]
targets = torch.arange(N, device=DEVICE).repeat_interleave(M)
seen = [0]
def ge2e_loop(e):
    centroids = e.mean(1)
    rows = []
    for j in range(N):
        for i in range(M):
            excl = (e[j].sum(0) - e[j, i]) / (M - 1)
            sims = F.cosine_similarity(e[j, i][None], centroids, dim=-1)
            own = F.cosine_similarity(e[j, i], excl, dim=0)
            rows.append(torch.cat([sims[:j], own[None], sims[j + 1:]]))
    sim = model.w * torch.stack(rows) + model.b
    return F.cross_entropy(sim, targets)
def ge2e_vectorised(e):
    centroids = F.normalize(e.mean(1), dim=-1)
    excl = F.normalize((e.sum(1, keepdim=True) - e) / (M - 1), dim=-1)
    sim = torch.einsum('jih,kh->jik', e, centroids)
    own = (e * excl).sum(-1)
    same = torch.eye(N, dtype=torch.bool, device=e.device)[:, None, :]
    sim = torch.where(same, own[..., None], sim).reshape(N * M, N)
    return F.cross_entropy(model.w * sim + model.b, targets)
def step(mels, loss_fn):
    opt.zero_grad(set_to_none=True)
    loss_fn(model(mels)).backward()
    model.w.grad.mul_(0.01)
    model.b.grad.mul_(0.01)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 3.0, foreach=True)
    opt.step()
    with torch.no_grad():
        model.w.clamp_(min=1e-6)
def next_batch():
    seen[0] += 1
    return batches[seen[0] % 4]
static_mels = batches[0].clone()
graph_step = (capture(lambda: step(static_mels, ge2e_vectorised))
              if FIXED == 'cuda_graph' else None)
""",
        "base": "step(next_batch(), ge2e_loop)",
        "fixes": {
            "vectorised": {"about": "the GE2E similarity matrix in closed form: exclusive "
                                    "centroids as (sum - e) / (M - 1), one einsum against the "
                                    "centroids, the own-speaker column put in with "
                                    "torch.where",
                           "code": "step(next_batch(), ge2e_vectorised)",
                           "match": ["vectorise", "vectoriz", "python loop", "batched"]},
            "cuda_graph": {"about": "that vectorised step (forward, backward, clipping, SGD, "
                                    "clamp) captured once; each batch copied into a static "
                                    "input, replayed",
                           "code": "static_mels.copy_(next_batch())\ngraph_step()",
                           "match": GRAPH_MATCH},
        },
    },
    "ctc_pcm16_pageable": {
        "about": "a CTC speech recogniser (a wav2vec-style strided Conv1d frontend of 64-256 "
                 "channels, 320x down, 2 Transformer encoder layers of width 256, 32 "
                 "characters; batch 16 clips of 10 s at 16 kHz, AdamW, fp32) whose step "
                 "converts the clips' 16-bit PCM to float on the host and copies the 10 MB "
                 "batch from pageable memory with .to(device)",
        "setup": """
torch.manual_seed(0)
B, SEC, SR, D, K, S = (2, 1, 1600, 16, 6, 5) if DRY else (16, 10, 16000, 256, 32, 120)
N = SEC * SR
F = torch.nn.functional
class Recogniser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        chans = [1, 64, 128, 128, 256, 256, 256]
        specs = [(10, 5), (3, 2), (3, 2), (3, 2), (2, 2), (2, 2)]
        layers = []
        for (k, st), cin, cout in zip(specs, chans, chans[1:]):
            layers += [torch.nn.Conv1d(cin, cout, k, st, bias=False), torch.nn.GroupNorm(1, cout),
                       torch.nn.GELU()]
        self.frontend = torch.nn.Sequential(*layers)
        self.proj = torch.nn.Linear(256, D)
        self.encoder = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(D, 4, 4 * D, 0.1, batch_first=True,
                                             norm_first=True), 2,
            enable_nested_tensor=False)
        self.head = torch.nn.Linear(D, K)
    def forward(self, wav):
        h = self.frontend(wav[:, None]).transpose(1, 2)
        return self.head(self.encoder(self.proj(h))).log_softmax(-1)
model = Recogniser().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
clips = [(torch.randn(B, N) * 3000).clamp(-32768, 32767).to(torch.int16) for _ in range(4)]
pinned_clips = [c.pin_memory() for c in clips] if CUDA and FIXED == 'pinned_int16' else clips
labels = [torch.randint(1, K, (B, S), device=DEVICE) for _ in range(4)]
label_lengths = torch.full((B,), S, dtype=torch.long)
seen = [0]
def train(wav, y):
    opt.zero_grad(set_to_none=True)
    log_probs = model(wav).transpose(0, 1)
    frame_lengths = torch.full((B,), log_probs.shape[0], dtype=torch.long)
    F.ctc_loss(log_probs, y, frame_lengths, label_lengths, zero_infinity=True).backward()
    opt.step()
def next_clip():
    seen[0] += 1
    return seen[0] % 4
def as_written():
    i = next_clip()
    train((clips[i].float() / 32768).to(DEVICE), labels[i])
def pinned_float():
    i = next_clip()
    wav = (clips[i].float() / 32768).pin_memory() if CUDA else clips[i].float() / 32768
    train(wav.to(DEVICE, non_blocking=True), labels[i])
def int16_then_convert(source, non_blocking):
    i = next_clip()
    train(source[i].to(DEVICE, non_blocking=non_blocking).float() / 32768, labels[i])
""",
        "base": "as_written()",
        "fixes": {
            "pinned_float": {"about": "the float batch made on the host as written, then "
                                      ".pin_memory() and .to(device, non_blocking=True)",
                             "code": "pinned_float()",
                             "match": ["pin-memory", "pin_memory", "non_blocking"]},
            "int16_copy": {"about": "the int16 PCM copied as is (5 MB, pageable) and "
                                    "converted to float on the GPU",
                           "code": "int16_then_convert(clips, False)",
                           "match": ["int16", "on the device", "convert"]},
            "pinned_int16": {"about": "the clips' int16 PCM held in pinned memory, copied "
                                      "with non_blocking=True and converted on the GPU",
                             "code": "int16_then_convert(pinned_clips, True)",
                             "match": ["pin-memory", "pin_memory", "non_blocking"]},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 12},
    },
}
