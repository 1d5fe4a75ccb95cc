"""Five of ``heldout_catalogue.py``'s held-out programs: fp32 products, an evaluation with
autograd on, gradients zeroed in place, tensors made on the host each step, a launch-bound
rollout.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it.
"""

from __future__ import annotations

from heldout_driver import Case

CAPTURE = """
def capture(step):
    '''step captured in a CUDA graph after three warm-up runs on a side stream; its replay.'''
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        step()
    return graph.replay
"""

MORE: dict[str, Case] = {
    "vit_fp32_training": {
        "about": "a ViT (patch 4 on 64x64 images: 256 tokens, width 384, 6 blocks, batch 32, "
                 "100 classes) trained with AdamW in fp32 at matmul precision 'highest' "
                 "(TF32 off, torch's default)",
        "setup": """
torch.set_float32_matmul_precision('high' if FIXED == 'tf32' else 'highest')
R, P, D, NH, L, B, K = (16, 4, 32, 2, 2, 2, 10) if DRY else (64, 4, 384, 6, 6, 32, 100)
F = torch.nn.functional
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.qkv, self.proj = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(),
                                       torch.nn.Linear(4 * D, D))
    def forward(self, x):
        b, n, _ = x.shape
        q, k, v = self.qkv(self.n1(x)).view(b, n, 3, NH, D // NH).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, n, D))
        return x + self.mlp(self.n2(x))
class ViT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.patch = torch.nn.Conv2d(3, D, P, stride=P)
        self.pos = torch.nn.Parameter(torch.zeros(1, (R // P) ** 2, D))
        self.blocks = torch.nn.Sequential(*[Block() for _ in range(L)])
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, K)
    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2) + self.pos
        return self.head(self.norm(self.blocks(x)).mean(1))
model = ViT().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.05)
images = torch.randn(B, 3, R, R, device=DEVICE)
labels = torch.randint(0, K, (B,), device=DEVICE)
def bf16_step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        loss = F.cross_entropy(model(images), labels)
    loss.backward()
    opt.step()
""",
        "base": """
opt.zero_grad(set_to_none=True)
F.cross_entropy(model(images), labels).backward()
opt.step()
""",
        "fixes": {
            "tf32": {"about": "torch.set_float32_matmul_precision('high') (TF32)",
                     "match": ["tf32", "float32_matmul"]},
            "bf16_autocast": {"about": "bf16 autocast around the forward and the loss",
                              "code": "bf16_step()",
                              "match": ["bf16-autocast", "bf16", "bfloat16"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 8},
    },
    "mixer_eval_grad": {
        "about": "the validation pass of an MLP-Mixer (patch 8 on 64x64 images: 64 tokens, "
                 "width 256, 8 blocks, batch 32) in eval() but with autograd on (no no_grad "
                 "or inference_mode), counting correct predictions on the device",
        "setup": """
R, P, D, S, L, B = (16, 4, 16, 8, 2, 2) if DRY else (64, 8, 256, 128, 8, 32)
TOKENS = (R // P) ** 2
class MixerBlock(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.token_mlp = torch.nn.Sequential(torch.nn.Linear(TOKENS, S), torch.nn.GELU(),
                                             torch.nn.Linear(S, TOKENS))
        self.channel_mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(),
                                               torch.nn.Linear(4 * D, D))
    def forward(self, x):
        x = x + self.token_mlp(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.channel_mlp(self.n2(x))
class Mixer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, D, P, stride=P)
        self.blocks = torch.nn.Sequential(*[MixerBlock() for _ in range(L)])
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, 100)
    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))
model = Mixer().to(DEVICE).eval()
val_images = torch.randn(4, B, 3, R, R, device=DEVICE)
val_labels = torch.randint(0, 100, (4, B), device=DEVICE)
tally = {'correct': torch.zeros((), dtype=torch.long, device=DEVICE), 'k': 0}
def evaluate(k):
    logits = model(val_images[k])
    tally['correct'] = tally['correct'] + (logits.argmax(-1) == val_labels[k]).sum()
static_in = val_images[0].clone()
static_logits = torch.zeros(B, 100, device=DEVICE)
replay = None
if CUDA and FIXED == 'cuda_graph':
    with torch.no_grad():
        replay = capture(lambda: static_logits.copy_(model(static_in)))
def evaluate_graphed(k):
    if replay is None:
        with torch.no_grad():
            return evaluate(k)
    static_in.copy_(val_images[k])
    replay()
    tally['correct'] = tally['correct'] + (static_logits.argmax(-1) == val_labels[k]).sum()
""",
        "base": """
tally['k'] += 1
evaluate(tally['k'] % 4)
""",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the batch",
                               "code": """
tally['k'] += 1
with torch.inference_mode():
    evaluate(tally['k'] % 4)
""",
                               "match": ["inference-mode", "inference_mode"]},
            "cuda_graph": {"about": "the forward captured once under no_grad in a CUDA graph, "
                                    "each batch copied into its static input, replayed",
                           "code": """
tally['k'] += 1
evaluate_graphed(tally['k'] % 4)
""",
                           "match": ["cuda-graph", "reduce-overhead"]},
        },
    },
    "two_tower_zero_grad": {
        "about": "a two-tower retrieval model (user and item ID tables of 1M and 500k rows x "
                 "64, small categorical tables, 3-layer MLPs, in-batch softmax over 2048 "
                 "pairs) trained with Adagrad, its gradients zeroed with "
                 "zero_grad(set_to_none=False)",
        "setup": """
U, I, B, E = (100, 200, 8, 8) if DRY else (1_000_000, 500_000, 2048, 64)
USER_CATS, ITEM_CATS = (1000, 100, 50, 20), (5000, 200, 30)
F = torch.nn.functional
class Tower(torch.nn.Module):
    def __init__(self, id_rows, cat_rows, dense):
        super().__init__()
        self.ids = torch.nn.Embedding(id_rows, E)
        self.cats = torch.nn.ModuleList([torch.nn.Embedding(n, 16) for n in cat_rows])
        self.mlp = torch.nn.Sequential(
            torch.nn.Linear(E + 16 * len(cat_rows) + dense, 256), torch.nn.ReLU(),
            torch.nn.Linear(256, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64))
    def forward(self, ids, cats, dense):
        parts = [self.ids(ids), *[emb(cats[:, j]) for j, emb in enumerate(self.cats)], dense]
        return F.normalize(self.mlp(torch.cat(parts, -1)), dim=-1)
users = Tower(U, USER_CATS, 16).to(DEVICE)
items = Tower(I, ITEM_CATS, 8).to(DEVICE)
opt = torch.optim.Adagrad([*users.parameters(), *items.parameters()], lr=0.05)
def fake_batch():
    def cats(sizes):
        return torch.stack([torch.randint(0, n, (B,), device=DEVICE) for n in sizes], 1)
    return (torch.randint(0, U, (B,), device=DEVICE), cats(USER_CATS),
            torch.randn(B, 16, device=DEVICE), torch.randint(0, I, (B,), device=DEVICE),
            cats(ITEM_CATS), torch.randn(B, 8, device=DEVICE))
data = [fake_batch() for _ in range(4)]
targets = torch.arange(B, device=DEVICE)
seen = [0]
def loss_of(batch):
    u, v = users(*batch[:3]), items(*batch[3:])
    return F.cross_entropy(u @ v.T / 0.05, targets)
""",
        "base": """
seen[0] += 1
opt.zero_grad(set_to_none=False)
loss_of(data[seen[0] % 4]).backward()
opt.step()
""",
        "fixes": {
            "set_to_none": {"about": "opt.zero_grad() (set_to_none=True)",
                            "code": """
seen[0] += 1
opt.zero_grad()
loss_of(data[seen[0] % 4]).backward()
opt.step()
""",
                            "match": ["zero-grad-none", "set_to_none"]},
        },
    },
    "char_lm_host_mask": {
        "about": "a byte-level decoder LM (3 blocks of nn.MultiheadAttention, width 256, 256 "
                 "tokens, batch 16) trained with AdamW; each step builds its causal mask "
                 "(256x256 fp32), positions and loss weights (padding byte 0 weighted 0) on "
                 "the host and moves them",
        "setup": """
V, T, D, NH, L, B = (32, 8, 16, 2, 2, 2) if DRY else (256, 256, 256, 4, 3, 16)
F = torch.nn.functional
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.attn = torch.nn.MultiheadAttention(D, NH, batch_first=True)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(D, 4 * D), torch.nn.GELU(),
                                       torch.nn.Linear(4 * D, D))
    def forward(self, x, mask):
        h = self.n1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.n2(x))
class CharLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(V, D), torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList([Block() for _ in range(L)])
        self.norm, self.head = torch.nn.LayerNorm(D), torch.nn.Linear(D, V)
        if FIXED == 'hoisted':
            self.register_buffer('causal', torch.triu(torch.full((T, T), float('-inf')), 1))
            self.register_buffer('positions', torch.arange(T))
    def forward(self, idx):
        n = idx.shape[1]
        if FIXED == 'hoisted':
            mask, pos = self.causal[:n, :n], self.positions[:n]
        elif FIXED == 'on_device':
            mask = torch.triu(torch.full((n, n), float('-inf'), device=idx.device), 1)
            pos = torch.arange(n, device=idx.device)
        else:
            mask = torch.triu(torch.full((n, n), float('-inf')), 1).to(idx.device)
            pos = torch.arange(n).to(idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))
model = CharLM().to(DEVICE)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
corpus = torch.randint(0, V, (32 * B, T + 1), device=DEVICE)
WEIGHT = torch.ones(V, device=DEVICE)
WEIGHT[0] = 0.0
seen = [0]
def step(weight):
    k = seen[0] % 32
    seen[0] += 1
    chunk = corpus[k * B:(k + 1) * B]
    opt.zero_grad(set_to_none=True)
    logits = model(chunk[:, :-1])
    F.cross_entropy(logits.reshape(-1, V), chunk[:, 1:].reshape(-1), weight=weight).backward()
    opt.step()
""",
        "base": """
weight = torch.ones(V)
weight[0] = 0.0
step(weight.to(DEVICE))
""",
        "fixes": {
            "on_device": {"about": "mask, positions and weights made on the device "
                                   "(torch.full/arange/ones(..., device=...)) each step",
                          "code": """
weight = torch.ones(V, device=DEVICE)
weight[0] = 0.0
step(weight)
""",
                          "match": ["tensor-on-device", "device=x.device"]},
            "hoisted": {"about": "mask and positions registered as buffers, the weights made "
                                 "once, before the loop",
                        "code": "step(WEIGHT)",
                        "match": ["tensor-on-device", "before the loop"]},
        },
    },
    "policy_rollout_launch_bound": {
        "about": "a PPO agent's rollout chunk on 256 GPU-simulated environments: 8 steps of "
                 "observation normalisation, actor and critic MLPs (width 64), Gumbel-max "
                 "action sampling and the simulator's update, under no_grad: small kernels, "
                 "each shorter than its launch",
        "setup": """
N, O, A, H, K = (4, 6, 3, 8, 2) if DRY else (256, 48, 12, 64, 8)
def mlp(out):
    return torch.nn.Sequential(torch.nn.Linear(O, H), torch.nn.Tanh(), torch.nn.Linear(H, H),
                               torch.nn.Tanh(), torch.nn.Linear(H, out)).to(DEVICE)
actor, critic = mlp(A), mlp(1)
obs = torch.randn(N, O, device=DEVICE)
obs_mean, obs_var = torch.zeros(O, device=DEVICE), torch.ones(O, device=DEVICE)
effect = 0.1 * torch.randn(A, O, device=DEVICE)
buf_obs = torch.zeros(K, N, O, device=DEVICE)
buf_act = torch.zeros(K, N, dtype=torch.long, device=DEVICE)
buf_logp, buf_value = torch.zeros(K, N, device=DEVICE), torch.zeros(K, N, device=DEVICE)
@torch.no_grad()
def rollout():
    for i in range(K):
        o = ((obs - obs_mean) / torch.sqrt(obs_var + 1e-8)).clamp(-5.0, 5.0)
        logits, value = actor(o), critic(o).squeeze(-1)
        act = (logits - torch.log(-torch.log(torch.rand_like(logits)))).argmax(-1)
        buf_obs[i].copy_(obs)
        buf_act[i].copy_(act)
        buf_logp[i].copy_(torch.log_softmax(logits, -1).gather(-1, act[:, None]).squeeze(-1))
        buf_value[i].copy_(value)
        obs.mul_(0.95).add_(effect[act]).add_(0.05 * torch.randn_like(obs))
replay = capture(rollout) if CUDA and FIXED == 'cuda_graph' else rollout
""",
        "base": "rollout()",
        "fixes": {
            "cuda_graph": {"about": "the rollout chunk captured once in a CUDA graph "
                                    "(torch.cuda.graph), replayed",
                           "code": "replay()", "match": ["cuda-graph", "reduce-overhead"]},
        },
    },
}
# the helper the graph fixes call, before each program that captures
for _name in ("mixer_eval_grad", "policy_rollout_launch_bound"):
    MORE[_name]["setup"] = CAPTURE + MORE[_name]["setup"]
