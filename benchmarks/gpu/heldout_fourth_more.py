"""Four of ``heldout_fourth.py``'s held-out programs: an isotropic ConvNeXt trained with a
per-parameter RMSprop and gradients zero-filled, a FastSpeech-style acoustic model served in
fp32 with autograd on, a CT nodule classifier fed by a per-patch DataLoader, and a CLIP-style
dual encoder whose step makes its labels and mask on the host and logs with ``.item()``.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it where one does. ``capture``
(``heldout_advice_fixes.CAPTURE``) is put before the setups that call it by
``heldout_fourth.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

MORE: dict[str, Case] = {
    "convnext_rmsprop_zero_fill": {
        "about": "an isotropic ConvNeXt (patchify 4, 12 blocks of width 128 with 7x7 "
                 "depthwise conv, LayerNorm, a 512 MLP and layer scale; 100 classes; batch 32 "
                 "of 96x96; TF32 on) trained with RMSprop(momentum=0.9, weight_decay, "
                 "foreach=False) over its 114 parameters, the gradients cleared with "
                 "zero_grad(set_to_none=False)",
        "setup": """
torch.manual_seed(0)
B, R, D, L, K = (2, 16, 8, 2, 5) if DRY else (32, 96, 128, 12, 100)
torch.backends.cuda.matmul.allow_tf32 = True
F = torch.nn.functional
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.dw = torch.nn.Conv2d(D, D, 7, padding=3, groups=D)
        self.norm = torch.nn.LayerNorm(D)
        self.fc1, self.fc2 = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)
        self.gamma = torch.nn.Parameter(torch.full((D,), 1e-6))
    def forward(self, x):
        h = self.norm(self.dw(x).permute(0, 2, 3, 1))
        h = self.gamma * self.fc2(F.gelu(self.fc1(h)))
        return x + h.permute(0, 3, 1, 2)
class ConvNeXtIso(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, D, 4, 4)
        self.blocks = torch.nn.Sequential(*[Block() for _ in range(L)])
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, K)
    def forward(self, x):
        return self.head(self.norm(self.blocks(self.stem(x)).mean((2, 3))))
model = ConvNeXtIso().to(DEVICE)
opt = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.9, eps=1e-3, momentum=0.9,
                          weight_decay=1e-5, foreach=FIXED in ('foreach', 'cuda_graph'),
                          capturable=CUDA and FIXED == 'cuda_graph')
batches = [(torch.randn(B, 3, R, R, device=DEVICE), torch.randint(0, K, (B,), device=DEVICE))
           for _ in range(4)]
seen = [0]
def step(images, y, set_to_none):
    opt.zero_grad(set_to_none=set_to_none)
    F.cross_entropy(model(images), y, label_smoothing=0.1).backward()
    opt.step()
def next_batch():
    seen[0] += 1
    return batches[seen[0] % 4]
static_images, static_y = batches[0][0].clone(), batches[0][1].clone()
graph_step = (capture(lambda: step(static_images, static_y, True))
              if FIXED == 'cuda_graph' else None)
""",
        "base": "step(*next_batch(), False)",
        "fixes": {
            "foreach": {"about": "RMSprop(foreach=True), zero_grad as written",
                        "match": ["fused-optimizer", "foreach"]},
            "set_to_none": {"about": "zero_grad(set_to_none=True), RMSprop(foreach=False) "
                                     "kept",
                            "code": "step(*next_batch(), True)",
                            "match": ["zero-grad-none", "set_to_none"]},
            "cuda_graph": {"about": "RMSprop(foreach, capturable), the whole step with "
                                    "set_to_none=True captured once; each batch copied into "
                                    "static inputs, replayed",
                           "code": """
images, y = next_batch()
static_images.copy_(images)
static_y.copy_(y)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 12},
    },
    "fastspeech_tts_grad": {
        "about": "a FastSpeech-style acoustic model (4 encoder and 4 decoder FFT blocks of "
                 "width 384, 2 heads, position-wise MLP of 1536, a duration predictor and a "
                 "length regulator by cumsum and searchsorted, 80 mel bins) synthesising 16 "
                 "sentences of 120 phonemes (about 11k mel frames) in fp32 with autograd on "
                 "(eval(), no no_grad) and TF32 off (the default)",
        "setup": """
torch.manual_seed(0)
P, D, NH, L, FF, T, B, MEL = ((40, 16, 2, 1, 32, 6, 2, 4) if DRY
                              else (80, 384, 2, 4, 1536, 120, 16, 80))
torch.backends.cuda.matmul.allow_tf32 = FIXED == 'tf32'
F = torch.nn.functional
class FFT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(D, NH, batch_first=True)
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.ff = torch.nn.Sequential(torch.nn.Linear(D, FF), torch.nn.ReLU(),
                                      torch.nn.Linear(FF, D))
    def forward(self, x, pad):
        x = self.ln1(x + self.attn(x, x, x, key_padding_mask=pad, need_weights=False)[0])
        return self.ln2(x + self.ff(x))
class FastSpeech(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.phone = torch.nn.Embedding(P, D, padding_idx=0)
        self.pos = torch.nn.Parameter(torch.randn(8 * T, D) * 0.02)
        self.enc = torch.nn.ModuleList([FFT() for _ in range(L)])
        self.dec = torch.nn.ModuleList([FFT() for _ in range(L)])
        self.duration = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.ReLU(),
                                            torch.nn.Linear(D, 1))
        self.mel = torch.nn.Linear(D, MEL)
    def forward(self, phones):
        pad = phones == 0
        x = self.phone(phones) + self.pos[:T]
        for block in self.enc:
            x = block(x, pad)
        frames = (self.duration(x).squeeze(-1).exp().round().clamp(1, 8)
                  .masked_fill(pad, 0).long())
        ends = frames.cumsum(1)
        n_out = int(ends[:, -1].max())  # the one host read: the padded mel length
        t = torch.arange(n_out, device=phones.device).expand(B, n_out).contiguous()
        src = torch.searchsorted(ends, t, right=True).clamp(max=T - 1)
        y = x.gather(1, src[..., None].expand(B, n_out, D)) + self.pos[:n_out]
        mel_pad = t >= ends[:, -1:]
        for block in self.dec:
            y = block(y, mel_pad)
        return self.mel(y).masked_fill(mel_pad[..., None], 0.0), ends[:, -1]
model = FastSpeech().to(DEVICE).eval()
with torch.no_grad():
    model.duration[2].bias.fill_(1.5)  # about 4.5 frames a phoneme, as a trained model
sentences = []
for _ in range(8):
    phones = torch.randint(1, P, (B, T))
    phones[torch.arange(T) >= torch.randint(T // 2, T + 1, (B, 1))] = 0
    sentences.append(phones.to(DEVICE))
seen, mels = [0], []
def synthesise():
    seen[0] += 1
    mels.append(model(sentences[seen[0] % 8]))
    del mels[:-4]
""",
        "base": "synthesise()",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the call",
                               "code": "with torch.inference_mode():\n    synthesise()",
                               "match": ["inference-mode", "inference_mode", "no_grad"]},
            "tf32": {"about": "torch.backends.cuda.matmul.allow_tf32 = True, autograd as "
                              "written",
                     "match": ["tf32", "allow_tf32", "set_float32_matmul_precision"]},
            "bf16_inference": {"about": "inference_mode with bf16 autocast",
                               "code": """
with torch.inference_mode(), torch.autocast(DEVICE, dtype=torch.bfloat16):
    synthesise()
""",
                               "match": ["bf16-autocast", "bf16", "bfloat16"]},
        },
        "timing": {"warmup": 6, "blocks": 5, "iters": 10},
    },
    "ct_patch_loader": {
        "about": "a CT nodule classifier (a 3-D CNN of 16-128 channels on 48^3 patches, 2 "
                 "classes, AdamW, bf16 autocast) fed by a DataLoader (num_workers=0, "
                 "pin_memory=False, batch 32) whose Dataset cuts one random patch a sample "
                 "from four 160^3 volumes and windows, normalises, flips, gamma-corrects and "
                 "noises it on the host (about 12 tensor ops on 110k voxels a sample)",
        "setup": """
torch.manual_seed(0)
S, P, B, NV = (24, 8, 4, 2) if DRY else (160, 48, 32, 4)
F = torch.nn.functional
volumes = torch.randn(NV, S, S, S) * 400 - 300
def augment(x, flips, gamma, noise):
    '''patches (n, P, P, P): HU window to [-1000, 400] scaled to [0, 1], flipped where
    flips (n, 3) says, gamma-corrected by gamma (n, 1, 1, 1), noised, standardised'''
    x = (x.clamp(-1000, 400) + 1000) / 1400
    for axis in range(3):
        x = torch.where(flips[:, axis].view(-1, 1, 1, 1), x.flip(1 + axis), x)
    x = x.pow(gamma)
    return (x + noise * torch.randn_like(x) - 0.5) / 0.25
class Patches(torch.utils.data.Dataset):
    def __len__(self):
        return 1_000_000
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        v = int(torch.randint(0, NV, (1,), generator=g))
        z, y, x = torch.randint(0, S - P, (3,), generator=g).tolist()
        flips = torch.rand(1, 3, generator=g) < 0.5
        gamma = 0.8 + 0.4 * torch.rand(1, 1, 1, 1, generator=g)
        return augment(volumes[v, z:z + P, y:y + P, x:x + P][None], flips, gamma, 0.02), i % 2
class BatchedPatches(Patches):
    def __getitems__(self, indices):
        g = torch.Generator().manual_seed(indices[0])
        n = len(indices)
        v = torch.randint(0, NV, (n,), generator=g)
        corner = torch.randint(0, S - P, (n, 3), generator=g)
        r = torch.arange(P)
        patches = volumes[v[:, None, None, None], (corner[:, 0, None] + r)[:, :, None, None],
                          (corner[:, 1, None] + r)[:, None, :, None],
                          (corner[:, 2, None] + r)[:, None, None, :]]
        flips = torch.rand(n, 3, generator=g) < 0.5
        gamma = 0.8 + 0.4 * torch.rand(n, 1, 1, 1, generator=g)
        return augment(patches, flips, gamma, 0.02)[:, None], torch.tensor(indices) % 2
def keep_batch(batch):
    return batch
loader_kw = {'loader_workers': dict(num_workers=2 if DRY else 4, persistent_workers=True,
                                    prefetch_factor=4),
             'pinned_non_blocking': dict(pin_memory=CUDA),
             'batched_dataset': dict(collate_fn=keep_batch)}.get(FIXED, {})
dataset = BatchedPatches() if FIXED == 'batched_dataset' else Patches()
loader = torch.utils.data.DataLoader(dataset, batch_size=B, shuffle=True, drop_last=True,
                                     **loader_kw)
def down(cin, cout):
    return [torch.nn.Conv3d(cin, cout, 3, 2, 1, bias=False), torch.nn.BatchNorm3d(cout),
            torch.nn.ReLU(inplace=True)]
model = torch.nn.Sequential(*down(1, 16), *down(16, 32), *down(32, 64), *down(64, 128),
                            torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(),
                            torch.nn.Linear(128, 2)).to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
batches = iter(loader)
def train(patches, y):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(patches).float(), y)
    loss.backward()
    opt.step()
""",
        "base": "train(*(t.to(DEVICE) for t in next(batches)))",
        "fixes": {
            "loader_workers": {"about": "DataLoader(num_workers=4, persistent_workers=True, "
                                        "prefetch_factor=4)",
                               "match": ["loader-workers", "num_workers"]},
            "pinned_non_blocking": {"about": "DataLoader(pin_memory=True), each batch copied "
                                             "with .to(device, non_blocking=True); no workers",
                                    "code": "train(*(t.to(DEVICE, non_blocking=True) "
                                            "for t in next(batches)))",
                                    "match": ["pin-memory", "pin_memory", "non_blocking"]},
            "batched_dataset": {"about": "the Dataset's __getitems__ cuts the batch's patches "
                                         "with one advanced index and augments them with "
                                         "batched ops (collate_fn passes it through)",
                                "match": ["batched-dataset", "__getitems__", "batchsampler"]},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 12},
    },
    "clip_towers_host_labels": {
        "about": "a CLIP-style dual encoder (an image tower: a 2-layer MLP over frozen "
                 "1024-d backbone features; a text tower: 4 causal Transformer layers of "
                 "width 256 over 32 tokens, end-of-text pooling; 256-d joint space, a learned "
                 "temperature; batch 512, AdamW, bf16 autocast) whose step makes the "
                 "contrastive labels and the causal mask on the host and .to(device)s them, "
                 "and reads the loss, the retrieval accuracy and the temperature with "
                 ".item() for logging",
        "setup": """
import math
torch.manual_seed(0)
V, D, NH, L, T, B, E, IMG = ((50, 16, 2, 1, 6, 4, 8, 12) if DRY
                             else (32000, 256, 4, 4, 32, 512, 256, 1024))
F = torch.nn.functional
class TextTower(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(V, D), torch.nn.Parameter(torch.zeros(T, D))
        self.layers = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(D, NH, 4 * D, 0.0, batch_first=True,
                                             norm_first=True), L, enable_nested_tensor=False)
        self.ln, self.proj = torch.nn.LayerNorm(D), torch.nn.Linear(D, E, bias=False)
    def forward(self, ids, causal):
        x = self.layers(self.tok(ids) + self.pos, mask=causal, is_causal=True)
        eot = ids.argmax(-1)  # the end-of-text token has the largest id
        return self.proj(self.ln(x[torch.arange(ids.shape[0], device=ids.device), eot]))
class CLIP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.image = torch.nn.Sequential(torch.nn.Linear(IMG, 1024), torch.nn.GELU(),
                                         torch.nn.Linear(1024, E))
        self.text = TextTower()
        self.logit_scale = torch.nn.Parameter(torch.tensor(math.log(1 / 0.07)))
    def forward(self, feats, ids, causal):
        img = F.normalize(self.image(feats), dim=-1)
        txt = F.normalize(self.text(ids, causal), dim=-1)
        return self.logit_scale.exp() * img @ txt.T
model = CLIP().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.2,
                        capturable=CUDA and FIXED == 'cuda_graph')
pairs = []
for _ in range(4):
    ids = torch.randint(1, V - 1, (B, T))
    ids[torch.arange(B), torch.randint(T // 2, T, (B,))] = V - 1
    pairs.append((torch.randn(B, IMG, device=DEVICE), ids.to(DEVICE)))
seen, log = [0], []
def host_made():
    labels = torch.arange(B).to(DEVICE)
    causal = torch.triu(torch.full((T, T), float('-inf')), 1).to(DEVICE)
    return labels, causal
def device_made():
    labels = torch.arange(B, device=DEVICE)
    causal = torch.triu(torch.full((T, T), float('-inf'), device=DEVICE), 1)
    return labels, causal
def step(feats, ids, labels, causal):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        logits = model(feats, ids, causal).float()
    loss = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
    loss.backward()
    opt.step()
    with torch.no_grad():
        model.logit_scale.clamp_(0, math.log(100))
    return loss, (logits.argmax(1) == labels).float().mean()
def train(made, read_items):
    seen[0] += 1
    loss, acc = step(*pairs[seen[0] % 4], *made())
    if read_items:
        log.append((loss.item(), acc.item(), model.logit_scale.exp().item()))
        del log[:-100]
static_feats, static_ids = pairs[0][0].clone(), pairs[0][1].clone()
static_labels, static_causal = device_made()
graph_step = (capture(lambda: step(static_feats, static_ids, static_labels, static_causal))
              if FIXED == 'cuda_graph' else None)
""",
        "base": "train(host_made, True)",
        "fixes": {
            "on_device": {"about": "labels and the causal mask made on the GPU (device= in "
                                   "arange and full); the .item() logging kept",
                          "code": "train(device_made, True)",
                          "match": ["tensor-on-device", "device=", "on the device"]},
            "no_item": {"about": "the three .item() reads dropped from the step (loss and "
                                 "accuracy left on the device); labels and mask as written",
                        "code": "train(host_made, False)",
                        "match": ["remove-sync", ".item()", "on the device"]},
            "cuda_graph": {"about": "labels and mask made once on the GPU, no .item(), AdamW "
                                    "capturable, the whole step captured once; each pair "
                                    "copied into static inputs, replayed",
                           "code": """
seen[0] += 1
feats, ids = pairs[seen[0] % 4]
static_feats.copy_(feats)
static_ids.copy_(ids)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 20},
    },
}
