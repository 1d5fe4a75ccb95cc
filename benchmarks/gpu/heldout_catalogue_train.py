"""Five of ``heldout_catalogue.py``'s held-out programs: training steps whose host feeds or
waits on the GPU (a pageable batch copy, a logged ``.item()``, a per-sample Python loop, an
optimizer's per-parameter loop, GradScaler's sync).

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it.
"""

from __future__ import annotations

from heldout_driver import Case

TRAIN: dict[str, Case] = {
    "kws_pageable_spectrograms": {
        "about": "a keyword-spotting Conv1d/BatchNorm net (80 mels x 1000 frames, batch 64, "
                 "20 MiB fp32 a batch) trained with Adam on log-mel batches held in pageable "
                 "host memory, each copied with .to(device)",
        "setup": """
M, T, C, B = (8, 32, 8, 4) if DRY else (80, 1000, 128, 64)
F = torch.nn.functional
def conv(cin, cout, k, stride):
    return [torch.nn.Conv1d(cin, cout, k, stride=stride, padding=k // 2, bias=False),
            torch.nn.BatchNorm1d(cout), torch.nn.ReLU()]
net = torch.nn.Sequential(*conv(M, C, 5, 1), *conv(C, C, 3, 2), *conv(C, 2 * C, 3, 2),
                          *conv(2 * C, 2 * C, 3, 2), torch.nn.AdaptiveAvgPool1d(1),
                          torch.nn.Flatten(), torch.nn.Linear(2 * C, 12)).to(DEVICE)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
batches = [(torch.randn(B, M, T), torch.randint(0, 12, (B,))) for _ in range(4)]
if FIXED == 'pinned_non_blocking' and CUDA:
    batches = [(x.pin_memory(), y.pin_memory()) for x, y in batches]
seen = [0]
def next_batch():
    seen[0] += 1
    return batches[seen[0] % len(batches)]
def train(x, y):
    x = (x - x.mean(dim=2, keepdim=True)) / (x.std(dim=2, keepdim=True) + 1e-5)
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(net(x), y).backward()
    opt.step()
""",
        "base": """
x, y = next_batch()
train(x.to(DEVICE), y.to(DEVICE))
""",
        "fixes": {
            "pinned_non_blocking": {
                "about": "the host batches pinned once, copied with .to(device, "
                         "non_blocking=True)",
                "code": """
x, y = next_batch()
train(x.to(DEVICE, non_blocking=True), y.to(DEVICE, non_blocking=True))
""",
                "match": ["pin-memory", "pin_memory", "pinned", "non_blocking"]},
        },
    },
    "gcn_logged_item": {
        "about": "a 3-layer graph convolutional network (32768 nodes, 262144 edges, 128 "
                 "features, index_add_ message passing) trained full-graph with Adam, logging "
                 "loss.item() and the training accuracy's .item() every step",
        "setup": """
N, E, D, H, K = (64, 256, 8, 8, 4) if DRY else (32768, 262144, 128, 128, 40)
F = torch.nn.functional
src = torch.randint(0, N, (E,), device=DEVICE)
dst = torch.randint(0, N, (E,), device=DEVICE)
deg = torch.zeros(N, device=DEVICE).index_add_(0, dst, torch.ones(E, device=DEVICE))
inv_sqrt = deg.clamp(min=1).rsqrt()
norm = (inv_sqrt[src] * inv_sqrt[dst])[:, None]
feats = torch.randn(N, D, device=DEVICE)
labels = torch.randint(0, K, (N,), device=DEVICE)
train_idx = torch.randperm(N, device=DEVICE)[:N // 2]
class GCNLayer(torch.nn.Module):
    def __init__(self, din, dout):
        super().__init__()
        self.lin = torch.nn.Linear(din, dout)
    def forward(self, h):
        h = self.lin(h)
        return torch.zeros_like(h).index_add_(0, dst, h[src] * norm)
class GCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([GCNLayer(D, H), GCNLayer(H, H), GCNLayer(H, K)])
        self.drop = torch.nn.Dropout(0.5)
    def forward(self, h):
        for layer in self.layers[:-1]:
            h = self.drop(F.relu(layer(h)))
        return self.layers[-1](h)
model = GCN().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-2, weight_decay=5e-4)
history = {'loss': [], 'acc': []}
""",
        "base": """
opt.zero_grad(set_to_none=True)
out = model(feats)
loss = F.cross_entropy(out[train_idx], labels[train_idx])
loss.backward()
opt.step()
history['loss'].append(loss.item())
history['acc'].append((out[train_idx].argmax(-1) == labels[train_idx]).float().mean().item())
""",
        "fixes": {
            "device_log": {
                "about": "the loss and accuracy kept as device tensors (loss.detach()), "
                         "read after training",
                "code": """
opt.zero_grad(set_to_none=True)
out = model(feats)
loss = F.cross_entropy(out[train_idx], labels[train_idx])
loss.backward()
opt.step()
history['loss'].append(loss.detach())
history['acc'].append((out[train_idx].argmax(-1) == labels[train_idx]).float().mean())
""",
                "match": ["remove-sync", "no .item()", "remove .item()"]},
        },
    },
    "forecaster_crop_loop": {
        "about": "a 2-layer LSTM forecaster (hidden 128, 72 steps in, 24 out, batch 128) whose "
                 "windows are cropped at a random offset, scaled and noised one sample at a "
                 "time in a Python loop on the GPU, then stacked",
        "setup": """
import random
B, T, FE, H, P = (4, 16, 3, 8, 4) if DRY else (128, 96, 8, 128, 24)
F = torch.nn.functional
rng = random.Random(0)
series = torch.randn(16 * B, T + 16, FE, device=DEVICE).cumsum(1) * 0.1
class Forecaster(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(FE, H, num_layers=2, batch_first=True)
        self.head = torch.nn.Linear(H, P)
    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out[:, -1])
model = Forecaster().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
seen = [0]
def next_windows():
    seen[0] += 1
    k = seen[0] % 16
    return series[k * B:(k + 1) * B]
def augment(batch):
    out = []
    for w in batch.unbind(0):
        start = rng.randint(0, 16)
        crop = w[start:start + T] * rng.uniform(0.8, 1.2)
        out.append(crop + 0.01 * torch.randn_like(crop))
    return torch.stack(out)
def augment_batched(batch):
    n = batch.shape[0]
    start = torch.randint(0, 17, (n, 1), device=batch.device)
    rows = (start + torch.arange(T, device=batch.device))[:, :, None]
    crop = batch.gather(1, rows.expand(-1, -1, batch.shape[2]))
    crop = crop * torch.empty(n, 1, 1, device=batch.device).uniform_(0.8, 1.2)
    return crop + 0.01 * torch.randn_like(crop)
def train(windows):
    opt.zero_grad(set_to_none=True)
    F.mse_loss(model(windows[:, :T - P]), windows[:, T - P:, 0]).backward()
    opt.step()
""",
        "base": "train(augment(next_windows()))",
        "fixes": {
            "vectorised": {"about": "the crop, scale and noise done for the whole batch at "
                                    "once (gather with per-row offsets)",
                           "code": "train(augment_batched(next_windows()))",
                           "match": ["vectorise", "vectoriz"]},
        },
    },
    "mobilenet_sgd_foreach_false": {
        "about": "a MobileNet-style depthwise-separable CNN (13 blocks, 83 parameter tensors, "
                 "64x64 images, batch 64, 200 classes) trained with SGD(momentum=0.9, "
                 "nesterov=True, weight_decay=4e-5, foreach=False)",
        "setup": """
R, B, WIDTH = (8, 2, 0.125) if DRY else (64, 64, 1.0)
F = torch.nn.functional
def conv_bn(cin, cout, k, stride, groups=1):
    return [torch.nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
            torch.nn.BatchNorm2d(cout), torch.nn.ReLU6(inplace=True)]
PLAN = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1),
        (512, 1), (512, 1), (512, 1), (1024, 2), (1024, 1)]
cin = max(8, int(32 * WIDTH))
layers = conv_bn(3, cin, 3, 2)
for cout, stride in PLAN:
    cout = max(8, int(cout * WIDTH))
    layers += conv_bn(cin, cin, 3, stride, groups=cin) + conv_bn(cin, cout, 1, 1)
    cin = cout
net = torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                          torch.nn.Dropout(0.2), torch.nn.Linear(cin, 200)).to(DEVICE)
kw = {None: dict(foreach=False), 'foreach': dict(foreach=True),
      'fused': dict(fused=CUDA)}[FIXED]
opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, nesterov=True,
                      weight_decay=4e-5, **kw)
images = torch.randn(B, 3, R, R, device=DEVICE)
targets = torch.randint(0, 200, (B,), device=DEVICE)
""",
        "base": """
opt.zero_grad(set_to_none=True)
F.cross_entropy(net(images), targets, label_smoothing=0.1).backward()
opt.step()
""",
        "fixes": {
            "foreach": {"about": "SGD(..., foreach=True) (torch's default on CUDA)",
                        "match": ["fused-optimizer", "foreach"]},
            "fused": {"about": "SGD(..., fused=True)",
                      "match": ["fused-optimizer", "fused=true", "fused optimizer"]},
        },
    },
    "unet_denoiser_fp16_scaler": {
        "about": "a small diffusion U-Net denoiser (GroupNorm/SiLU residual blocks, 64-128 "
                 "channels, 32x32 images, batch 32) trained with fp16 autocast, GradScaler "
                 "and AdamW (the scaler's step syncs on its inf check)",
        "setup": """
import math
C, R, B = (8, 8, 2) if DRY else (64, 32, 32)
F = torch.nn.functional
class ResBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n1, self.n2 = torch.nn.GroupNorm(8, c), torch.nn.GroupNorm(8, c)
        self.c1 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.c2 = torch.nn.Conv2d(c, c, 3, padding=1)
        self.t = torch.nn.Linear(4 * C, c)
    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x))) + self.t(temb)[:, :, None, None]
        return x + self.c2(F.silu(self.n2(h)))
class Denoiser(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.temb = torch.nn.Sequential(torch.nn.Linear(C, 4 * C), torch.nn.SiLU(),
                                        torch.nn.Linear(4 * C, 4 * C))
        self.inp = torch.nn.Conv2d(3, C, 3, padding=1)
        self.down1, self.down2, self.mid = ResBlock(C), ResBlock(2 * C), ResBlock(2 * C)
        self.pool = torch.nn.Conv2d(C, 2 * C, 3, stride=2, padding=1)
        self.up = torch.nn.Conv2d(2 * C, C, 3, padding=1)
        self.up1 = ResBlock(C)
        self.out = torch.nn.Sequential(torch.nn.GroupNorm(8, C), torch.nn.SiLU(),
                                       torch.nn.Conv2d(C, 3, 3, padding=1))
    def forward(self, x, t):
        freqs = torch.exp(-math.log(10000.0) * torch.arange(C // 2, device=x.device) / (C // 2))
        angle = t[:, None].float() * freqs[None]
        temb = self.temb(torch.cat([angle.sin(), angle.cos()], -1))
        h0 = self.down1(self.inp(x), temb)
        h = self.mid(self.down2(self.pool(h0), temb), temb)
        h = self.up(F.interpolate(h, scale_factor=2.0, mode='nearest')) + h0
        return self.out(self.up1(h, temb))
model = Denoiser().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=2e-4, fused=FIXED == 'fused_adamw' and CUDA)
scaler = torch.amp.GradScaler(DEVICE, enabled=CUDA)
alpha_bar = torch.cumprod(1 - torch.linspace(1e-4, 0.02, 1000, device=DEVICE), 0)
images = torch.rand(8 * B, 3, R, R, device=DEVICE) * 2 - 1
seen = [0]
def noised():
    seen[0] += 1
    x0 = images[(seen[0] % 8) * B:(seen[0] % 8 + 1) * B]
    t = torch.randint(0, 1000, (B,), device=DEVICE)
    noise = torch.randn_like(x0)
    a = alpha_bar[t][:, None, None, None]
    return a.sqrt() * x0 + (1 - a).sqrt() * noise, t, noise
def bf16_step():
    x, t, noise = noised()
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        pred = model(x, t)
    F.mse_loss(pred.float(), noise).backward()
    opt.step()
""",
        "base": """
x, t, noise = noised()
opt.zero_grad(set_to_none=True)
with torch.autocast(DEVICE, dtype=torch.float16, enabled=CUDA):
    pred = model(x, t)
loss = F.mse_loss(pred.float(), noise)
scaler.scale(loss).backward()
scaler.step(opt)
scaler.update()
""",
        "fixes": {
            "bf16_no_scaler": {"about": "bf16 autocast, no GradScaler",
                               "code": "bf16_step()", "match": ["bf16-autocast"]},
            "fused_adamw": {"about": "AdamW(..., fused=True) under the same fp16 GradScaler "
                                     "(the scaler's inf check stays on the device)",
                            "match": ["fused-optimizer", "fused=true", "fused optimizer"]},
        },
    },
}
