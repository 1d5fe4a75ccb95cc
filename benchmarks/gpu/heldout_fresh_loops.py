"""Three of ``heldout_fresh.py``'s held-out programs whose steps loop in Python: a PPO
update over minibatches, a tabular model's per-column loops, a SimCLR step's per-anchor loss.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it. ``capture`` (``heldout_advice_fixes.CAPTURE``) is put
before the setups that call it by ``heldout_fresh.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

LOOPS: dict[str, Case] = {
    "ppo_update_syncs": {
        "about": "a PPO update (2048 transitions, 64-dim observations, 8-dim Gaussian "
                 "actions, tanh actor and critic MLPs of width 128, 2 epochs of 4 minibatches "
                 "of 512) with Adam(foreach=False), clip_grad_norm_, torch.distributions.Normal "
                 "(argument validation on: syncs) and approx-KL / clip-fraction .item() after "
                 "every minibatch",
        "setup": """
torch.manual_seed(0)
N, O, A, H, MB, EPOCHS = (32, 6, 2, 8, 16, 2) if DRY else (2048, 64, 8, 128, 512, 2)
TARGET_KL = 0.5
F = torch.nn.functional
VALIDATE = False if FIXED in ('remove_sync', 'cuda_graph') else None
def mlp(out):
    return torch.nn.Sequential(torch.nn.Linear(O, H), torch.nn.Tanh(), torch.nn.Linear(H, H),
                               torch.nn.Tanh(), torch.nn.Linear(H, out))
class ActorCritic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.pi, self.v = mlp(A), mlp(1)
        self.log_std = torch.nn.Parameter(torch.full((A,), -0.5))
    def dist(self, o):
        return torch.distributions.Normal(self.pi(o), self.log_std.exp(), validate_args=VALIDATE)
agent = ActorCritic().to(DEVICE)
kw = {'fused_adam': dict(fused=CUDA), 'cuda_graph': dict(foreach=False, capturable=CUDA)}
opt = torch.optim.Adam(agent.parameters(), lr=3e-4, eps=1e-5,
                       **kw.get(FIXED, dict(foreach=False)))
obs, act = torch.randn(N, O, device=DEVICE), torch.randn(N, A, device=DEVICE)
adv, ret = torch.randn(N, device=DEVICE), torch.randn(N, device=DEVICE)
log = []
def minibatch(idx, old_logp):
    d = agent.dist(obs[idx])
    logp = d.log_prob(act[idx]).sum(-1)
    ratio = (logp - old_logp[idx]).exp()
    pg = -torch.min(ratio * adv[idx], ratio.clamp(0.8, 1.2) * adv[idx]).mean()
    vloss = F.mse_loss(agent.v(obs[idx]).squeeze(-1), ret[idx])
    loss = pg + 0.5 * vloss - 0.01 * d.entropy().sum(-1).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(agent.parameters(), 0.5)
    opt.step()
    with torch.no_grad():
        approx_kl = ((ratio - 1) - (logp - old_logp[idx])).mean()
        clipfrac = ((ratio - 1).abs() > 0.2).float().mean()
    return approx_kl, clipfrac
def update_logged():
    with torch.no_grad():
        old_logp = agent.dist(obs).log_prob(act).sum(-1)
    for epoch in range(EPOCHS):
        perm = torch.randperm(N, device=DEVICE)
        for start in range(0, N, MB):
            approx_kl, clipfrac = minibatch(perm[start:start + MB], old_logp)
            log.append((approx_kl.item(), clipfrac.item()))
            if approx_kl.item() > TARGET_KL:
                return
def update_quiet(perms=None):
    with torch.no_grad():
        old_logp = agent.dist(obs).log_prob(act).sum(-1)
    for epoch in range(EPOCHS):
        perm = torch.randperm(N, device=DEVICE) if perms is None else perms[epoch]
        kls = []
        for start in range(0, N, MB):
            approx_kl, clipfrac = minibatch(perm[start:start + MB], old_logp)
            kls.append(approx_kl)
            log.append((approx_kl, clipfrac))
        epoch_kl = torch.stack(kls).mean()
        if perms is None and epoch_kl > TARGET_KL:
            return epoch_kl
    return epoch_kl
static_perms = torch.zeros(EPOCHS, N, dtype=torch.long, device=DEVICE)
static_kl = torch.zeros((), device=DEVICE)
graph_update = None
if FIXED == 'cuda_graph':
    graph_update = capture(lambda: static_kl.copy_(update_quiet(static_perms)))
def update_graphed():
    static_perms.copy_(torch.stack([torch.randperm(N, device=DEVICE) for _ in range(EPOCHS)]))
    graph_update()
    log.append(static_kl.clone())
    if static_kl > TARGET_KL:
        log.append('stopped')
""",
        "base": "update_logged()",
        "fixes": {
            "remove_sync": {"about": "Normal(..., validate_args=False), the KL and clip "
                                     "fraction kept on the device, KL checked once an epoch",
                            "code": "update_quiet()",
                            "match": ["remove-sync", ".item()", "validate_args"]},
            "fused_adam": {"about": "Adam(..., fused=True)",
                           "match": ["fused-optimizer", "fused=true", "fused adam",
                                     "fused optimizer"]},
            "cuda_graph": {"about": "the whole update captured once (Adam capturable, "
                                    "foreach=False kept) and replayed; capture refuses the "
                                    "syncs: validate_args=False, the stats on the device, the "
                                    "KL read once after the replay; each epoch's permutation "
                                    "copied into a static buffer",
                           "code": "update_graphed()", "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 8},
    },
    "tabular_column_loops": {
        "about": "a multi-task tabular MLP (20 categorical columns, each its own nn.Embedding "
                 "looked up in a Python loop; 30 numeric columns normalised one column at a "
                 "time with Python-float statistics; 3 regression targets, a loss per target; "
                 "batch 512) trained with AdamW",
        "setup": """
torch.manual_seed(0)
CARD = (1000, 50, 12, 7, 300, 24, 5000, 31, 2, 60, 150, 9, 400, 18, 3, 75, 2000, 40, 6, 250)
NUM, TASKS, E, B = 30, 3, 16, (8 if DRY else 512)
F = torch.nn.functional
mean, std = torch.randn(NUM), torch.rand(NUM) + 0.5
TASK_W = (1.0, 0.5, 0.25)
def body():
    return torch.nn.Sequential(torch.nn.Linear(E * len(CARD) + NUM, 256), torch.nn.ReLU(),
                               torch.nn.Dropout(0.1), torch.nn.Linear(256, 128),
                               torch.nn.ReLU(), torch.nn.Linear(128, TASKS))
class TabularNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embs = torch.nn.ModuleList([torch.nn.Embedding(n, E) for n in CARD])
        self.mean, self.std = mean.tolist(), std.tolist()
        self.mlp = body()
    def forward(self, cat, num):
        num = num.clone()
        for j in range(NUM):
            num[:, j] = (num[:, j] - self.mean[j]) / self.std[j]
        parts = [emb(cat[:, j]) for j, emb in enumerate(self.embs)]
        return self.mlp(torch.cat(parts + [num], 1))
class TabularNetVec(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.table = torch.nn.Embedding(sum(CARD), E)
        starts = torch.tensor((0,) + CARD[:-1]).cumsum(0)
        self.register_buffer('starts', starts)
        self.register_buffer('mean', mean.clone())
        self.register_buffer('std', std.clone())
        self.mlp = body()
    def forward(self, cat, num):
        emb = self.table(cat + self.starts).flatten(1)
        return self.mlp(torch.cat([emb, (num - self.mean) / self.std], 1))
model = (TabularNetVec() if FIXED == 'vectorised' else TabularNet()).to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, capturable=CUDA and FIXED == 'cuda_graph')
task_w = torch.tensor(TASK_W, device=DEVICE)
data = [(torch.stack([torch.randint(0, n, (B,)) for n in CARD], 1).to(DEVICE),
         torch.randn(B, NUM, device=DEVICE), torch.randn(B, TASKS, device=DEVICE))
        for _ in range(8)]
seen = [0]
def next_batch():
    seen[0] += 1
    return data[seen[0] % 8]
def step(cat, num, y):
    opt.zero_grad(set_to_none=True)
    pred = model(cat, num)
    loss = sum(TASK_W[k] * F.mse_loss(pred[:, k], y[:, k]) for k in range(TASKS))
    loss.backward()
    opt.step()
static = [t.clone() for t in data[0]]
graph_step = capture(lambda: step(*static)) if FIXED == 'cuda_graph' else None
""",
        "base": "step(*next_batch())",
        "fixes": {
            "vectorised": {"about": "one embedding table with per-column row offsets (one "
                                    "lookup), the numeric columns normalised at once with "
                                    "tensor statistics, one weighted loss over the targets",
                           "code": """
cat, num, y = next_batch()
opt.zero_grad(set_to_none=True)
(((model(cat, num) - y) ** 2).mean(0) @ task_w).backward()
opt.step()
""",
                           "match": ["vectorise", "vectoriz", "python loop", "per-column"]},
            "cuda_graph": {"about": "the step as written (loops kept) captured once (AdamW "
                                    "capturable), each batch copied into static inputs, "
                                    "replayed",
                           "code": """
for buf, t in zip(static, next_batch()):
    buf.copy_(t)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
    },
    "simclr_anchor_loop": {
        "about": "a SimCLR step: a small ResNet-style CNN (64-256 channels, 32x32 crops, 2 "
                 "views of 64 images) in NCHW under bf16 autocast, its NT-Xent loss computed "
                 "one anchor at a time in a Python loop (128 rows, each picking its negatives "
                 "with a boolean mask: a sync a row), SGD with momentum",
        "setup": """
torch.manual_seed(0)
R, B, W = (8, 4, 8) if DRY else (32, 64, 64)
F = torch.nn.functional
def stage(cin, cout):
    return [torch.nn.Conv2d(cin, cout, 3, 2, 1, bias=False), torch.nn.BatchNorm2d(cout),
            torch.nn.ReLU(inplace=True), torch.nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
            torch.nn.BatchNorm2d(cout), torch.nn.ReLU(inplace=True)]
encoder = torch.nn.Sequential(
    torch.nn.Conv2d(3, W, 3, 1, 1, bias=False), torch.nn.BatchNorm2d(W), torch.nn.ReLU(),
    *stage(W, W), *stage(W, 2 * W), *stage(2 * W, 4 * W), torch.nn.AdaptiveAvgPool2d(1),
    torch.nn.Flatten(), torch.nn.Linear(4 * W, 256), torch.nn.ReLU(),
    torch.nn.Linear(256, 128)).to(DEVICE)
images = torch.rand(8, B, 3, R, R, device=DEVICE)
if FIXED == 'channels_last':
    encoder = encoder.to(memory_format=torch.channels_last)
opt = torch.optim.SGD(encoder.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-6)
seen = [0]
def views():
    seen[0] += 1
    x = images[seen[0] % 8]
    a = torch.where(torch.rand(B, 1, 1, 1, device=DEVICE) < 0.5, x.flip(3), x)
    b = x * torch.empty(B, 1, 1, 1, device=DEVICE).uniform_(0.6, 1.4)
    v = torch.cat([a, b]) + 0.05 * torch.randn(2 * B, 3, R, R, device=DEVICE)
    return v.contiguous(memory_format=torch.channels_last) if FIXED == 'channels_last' else v
def nt_xent_loop(z, tau=0.2):
    z = F.normalize(z, dim=1)
    sim = z @ z.T / tau
    n = z.shape[0]
    losses = []
    for i in range(n):
        keep = torch.ones(n, dtype=torch.bool, device=z.device)
        keep[i] = False
        partner = (i + n // 2) % n
        losses.append(-F.log_softmax(sim[i][keep], 0)[partner - (partner > i)])
    return torch.stack(losses).mean()
def nt_xent(z, tau=0.2):
    z = F.normalize(z, dim=1)
    n = z.shape[0]
    sim = (z @ z.T / tau).masked_fill(torch.eye(n, dtype=torch.bool, device=z.device),
                                      float('-inf'))
    return F.cross_entropy(sim, (torch.arange(n, device=z.device) + n // 2) % n)
def step(loss_fn):
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        z = encoder(views())
    loss_fn(z.float()).backward()
    opt.step()
""",
        "base": "step(nt_xent_loop)",
        "fixes": {
            "vectorised": {"about": "NT-Xent over the whole similarity matrix at once (the "
                                    "diagonal masked with -inf, one cross_entropy)",
                           "code": "step(nt_xent)",
                           "match": ["vectorise", "vectoriz", "python loop", "per-row"]},
            "channels_last": {"about": "encoder and views in torch.channels_last (the loss "
                                       "loop kept)",
                              "match": ["channels-last", "channels_last"]},
        },
        "timing": {"warmup": 3, "blocks": 5, "iters": 6},
    },
}
