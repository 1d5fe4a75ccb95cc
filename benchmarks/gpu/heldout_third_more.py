"""Four of ``heldout_third.py``'s held-out programs: a BiLSTM-CRF tagger decoding with a
per-sentence, per-token Viterbi loop, a deep-equilibrium classifier whose solver and
gradient clipping read ``.item()`` for control flow, an activity recogniser fed by a
per-window DataLoader, and a sentence-embedding search served in fp32 with autograd on.

Same form as ``heldout_driver.py``'s cases. Each fix's first ``match`` word is the name of
the catalogue's fix that names it where one does. ``capture``
(``heldout_advice_fixes.CAPTURE``) is put before the setups that call it by
``heldout_third.py``.
"""

from __future__ import annotations

from heldout_advice_fixes import GRAPH_MATCH
from heldout_driver import Case

MORE: dict[str, Case] = {
    "bilstm_crf_viterbi_loop": {
        "about": "a BiLSTM-CRF named-entity tagger (vocab 20000, embeddings 128, 2-layer "
                 "BiLSTM of 256, 9 BIO tags) under inference_mode for 8 sentences of 20-40 "
                 "tokens, Viterbi-decoded one sentence at a time in Python: a loop over "
                 "tokens (broadcast add, max) and a backtracking loop (one index a token), "
                 "about 4 ops a token",
        "setup": """
torch.manual_seed(0)
V, E, H, K, T, B = (50, 8, 8, 5, 6, 2) if DRY else (20000, 128, 256, 9, 40, 8)
class BiLSTMCRF(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, E, padding_idx=0)
        self.lstm = torch.nn.LSTM(E, H, num_layers=2, bidirectional=True, batch_first=True)
        self.proj = torch.nn.Linear(2 * H, K)
        self.transitions = torch.nn.Parameter(torch.randn(K, K) * 0.1)
        self.start = torch.nn.Parameter(torch.randn(K) * 0.1)
        self.end = torch.nn.Parameter(torch.randn(K) * 0.1)
    def emissions(self, ids):
        return self.proj(self.lstm(self.emb(ids))[0])
model = BiLSTMCRF().to(DEVICE).eval()
batches = []
for _ in range(4):
    lengths = torch.randint(T // 2, T + 1, (B,)).tolist()
    ids = torch.randint(1, V, (B, T))
    mask = torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]
    batches.append((ids.masked_fill(~mask, 0).to(DEVICE), mask.to(DEVICE), lengths))
seen, results = [0], []
def viterbi_one(em, n):
    '''the best tag path of one sentence: em is its (T, K) emissions, n its length'''
    score = model.start + em[0]
    history = []
    for t in range(1, n):
        score, best_prev = (score[:, None] + model.transitions + em[t][None, :]).max(0)
        history.append(best_prev)
    tag = (score + model.end).argmax().view(1)
    path = [tag]
    for best_prev in reversed(history):
        tag = best_prev.gather(0, tag)
        path.append(tag)
    return torch.cat(path[::-1])
def decode_loop(em, mask, lengths):
    return [viterbi_one(em[b], n) for b, n in enumerate(lengths)]
def decode_batched(em, mask, lengths=None):
    '''every sentence at once: one (B, K, K) max a token, padded steps keep their score'''
    score = model.start + em[:, 0]
    history = []
    for t in range(1, em.shape[1]):
        nxt, best_prev = (score[:, :, None] + model.transitions + em[:, t, None, :]).max(1)
        score = torch.where(mask[:, t, None], nxt, score)
        history.append(best_prev)
    tags = [(score + model.end).argmax(1)]
    for t in range(em.shape[1] - 1, 0, -1):
        prev = history[t - 1].gather(1, tags[-1][:, None]).squeeze(1)
        tags.append(torch.where(mask[:, t], prev, tags[-1]))
    return torch.stack(tags[::-1], 1)
def next_batch():
    seen[0] += 1
    return batches[seen[0] % 4]
@torch.inference_mode()
def tag(decode):
    ids, mask, lengths = next_batch()
    return decode(model.emissions(ids), mask, lengths)
static_ids, static_mask = batches[0][0].clone(), batches[0][1].clone()
static_out = []
def _graphed():
    static_out[:] = [decode_batched(model.emissions(static_ids), static_mask)]
replay = None
if FIXED == 'cuda_graph':
    with torch.no_grad():
        replay = capture(_graphed)
def tag_graphed():
    ids, mask, lengths = next_batch()
    static_ids.copy_(ids)
    static_mask.copy_(mask)
    replay()
    return static_out[0].clone()
""",
        "base": "results.append(tag(decode_loop))\ndel results[:-4]",
        "fixes": {
            "vectorised": {"about": "Viterbi over the whole padded batch at once: one batched "
                                    "max a token with the mask, one gather a token to "
                                    "backtrack (a loop over tokens, none over sentences)",
                           "code": "results.append(tag(decode_batched))\ndel results[:-4]",
                           "match": ["vectorise", "vectoriz", "python loop", "batched"]},
            "cuda_graph": {"about": "the emissions and the batched Viterbi captured once "
                                    "under no_grad (ids and mask copied into static inputs, "
                                    "the tags cloned) and replayed",
                           "code": "results.append(tag_graphed())\ndel results[:-4]",
                           "match": GRAPH_MATCH},
        },
    },
    "deq_solver_item_checks": {
        "about": "a deep-equilibrium classifier (z = tanh(W z + U x), width 1024, batch 512, "
                 "256 input features, 10 classes) trained with Adam: the fixed point solved "
                 "under no_grad until the relative residual read with .item() each "
                 "iteration falls below 1e-5 (about 16 iterations, at most 40), one step "
                 "with gradient, then the gradient norm summed by hand per parameter, read "
                 "with .item() to decide on clipping and again to log it",
        "setup": """
torch.manual_seed(0)
B, IN, D, K, MAXIT = (4, 8, 16, 3, 40) if DRY else (512, 256, 1024, 10, 40)
TOL = 1e-5
CLIP = 1.0
F = torch.nn.functional
class DEQ(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.U = torch.nn.Linear(IN, D)
        self.W = torch.nn.Linear(D, D, bias=False)
        self.head = torch.nn.Linear(D, K)
    def f(self, z, u):
        return torch.tanh(self.W(z) + u)
model = DEQ().to(DEVICE)
params = list(model.parameters())
opt = torch.optim.Adam(params, lr=1e-4, capturable=CUDA and FIXED == 'cuda_graph')
data = [(torch.randn(B, IN, device=DEVICE), torch.randint(0, K, (B,), device=DEVICE))
        for _ in range(8)]
seen, norms = [0], []
norm_sum = torch.zeros((), device=DEVICE)
def solve_checked(u, every):
    z = torch.zeros(B, D, device=u.device)
    with torch.no_grad():
        for i in range(MAXIT):
            z_next = model.f(z, u)
            if (i + 1) % every == 0:
                residual = (z_next - z).norm() / (z_next.norm() + 1e-8)
                if residual.item() < TOL:
                    return z_next
            z = z_next
    return z
with torch.no_grad():  # the solver's iteration count, found once before training
    z, u = torch.zeros(B, D, device=DEVICE), model.U(data[0][0])
    for ITERS in range(1, MAXIT + 1):
        z_next = model.f(z, u)
        if ((z_next - z).norm() / (z_next.norm() + 1e-8)).item() < TOL:
            break
        z = z_next
def solve_fixed(u):
    z = torch.zeros(B, D, device=u.device)
    with torch.no_grad():
        for _ in range(ITERS):
            z = model.f(z, u)
    return z
def forward_backward(x, y, solve):
    opt.zero_grad(set_to_none=True)
    u = model.U(x)
    z = model.f(solve(u.detach()), u)  # one step with gradient at the fixed point
    loss = F.cross_entropy(model.head(z), y)
    loss.backward()
    return loss
def clip_by_hand():
    total = torch.sqrt(sum(p.grad.pow(2).sum() for p in params))
    if total.item() > CLIP:
        for p in params:
            p.grad.mul_(CLIP / total)
    norms.append(total.item())
    del norms[:-100]
def next_batch():
    seen[0] += 1
    return data[seen[0] % 8]
def step_as_written(every=1):
    forward_backward(*next_batch(), lambda u: solve_checked(u, every))
    clip_by_hand()
    opt.step()
def step_quiet(x, y, solve):
    forward_backward(x, y, solve)
    norm_sum.add_(torch.nn.utils.clip_grad_norm_(params, CLIP, foreach=True))
    opt.step()
static_x, static_y = data[0][0].clone(), data[0][1].clone()
graph_step = (capture(lambda: step_quiet(static_x, static_y, solve_fixed))
              if FIXED == 'cuda_graph' else None)
""",
        "base": "step_as_written()",
        "fixes": {
            "check_every_5": {"about": "the residual read every 5 iterations instead of each "
                                       "(at most 4 iterations more); clipping as written",
                              "code": "step_as_written(every=5)",
                              "match": ["remove-sync", "every n", ".item()", "fewer"]},
            "clip_grad_norm_foreach": {
                "about": "the hand-summed norm and its two .item() reads replaced by "
                         "clip_grad_norm_(foreach=True), the norm summed on the device; the "
                         "solver as written",
                "code": "step_quiet(*next_batch(), lambda u: solve_checked(u, 1))",
                "match": ["remove-sync", "clip_grad_norm_", "foreach", "on the device"]},
            "no_sync": {"about": "the solver run for the iteration count found once before "
                                 "training, no residual read; clip_grad_norm_(foreach=True) "
                                 "with the norm kept on the device",
                        "code": "step_quiet(*next_batch(), solve_fixed)",
                        "match": ["remove-sync", ".item()", "on the device", "fixed"]},
            "cuda_graph": {"about": "that sync-free step (Adam capturable) captured once, "
                                    "each batch copied into static inputs, replayed",
                           "code": """
x, y = next_batch()
static_x.copy_(x)
static_y.copy_(y)
graph_step()
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 10, "blocks": 5, "iters": 30},
    },
    "har_imu_window_loader": {
        "about": "a human-activity recogniser (a 1-D CNN of 64-128-128 channels on 10 signal "
                 "channels plus an MLP on 9x32 spectral features, 6 classes, Adam) fed by a "
                 "DataLoader (num_workers=0, pin_memory=False) whose Dataset cuts one 128-step "
                 "window of 9 IMU channels a sample and z-normalises, jitters, rescales and "
                 "takes the rFFT magnitude of it on the host (about 15 tensor ops a sample, "
                 "batch 128)",
        "setup": """
torch.manual_seed(0)
C, WIN, B, NF, K = (9, 16, 4, 4, 6) if DRY else (9, 128, 128, 32, 6)
STEPS = 20_000 if DRY else 2_000_000
F = torch.nn.functional
def featurise(w):
    '''per window (..., C, WIN): z-normalised, jittered and rescaled signal with the
    acceleration magnitude, and the log rFFT magnitude of its first NF bins'''
    w = (w - w.mean(-1, keepdim=True)) / (w.std(-1, keepdim=True) + 1e-6)
    w = w + 0.01 * torch.randn_like(w)
    w = w * (1 + 0.1 * torch.randn(*w.shape[:-1], 1))
    magnitude = w[..., :3, :].norm(dim=-2, keepdim=True)
    spectrum = torch.fft.rfft(w, dim=-1).abs()[..., :NF].log1p()
    return torch.cat([w, magnitude], -2), spectrum.flatten(-2)
class IMUWindows(torch.utils.data.Dataset):
    def __init__(self):
        self.signal = torch.randn(C, STEPS).cumsum(1) * 0.01
        self.labels = torch.randint(0, K, (STEPS // WIN,))
    def __len__(self):
        return 1_000_000
    def __getitem__(self, i):
        start = (i * 7907) % (STEPS - WIN)
        signal, spectrum = featurise(self.signal[:, start:start + WIN])
        return signal, spectrum, self.labels[start // WIN]
class BatchedIMUWindows(IMUWindows):
    def __getitems__(self, indices):
        starts = (torch.tensor(indices) * 7907) % (STEPS - WIN)
        windows = self.signal[:, starts[:, None] + torch.arange(WIN)].transpose(0, 1)
        signal, spectrum = featurise(windows)
        return signal, spectrum, self.labels[starts // WIN]
def keep_batch(batch):
    return batch
loader_kw = {'loader_workers': dict(num_workers=2 if DRY else 4, persistent_workers=True,
                                    prefetch_factor=4),
             'pinned_non_blocking': dict(pin_memory=CUDA),
             'batched_dataset': dict(collate_fn=keep_batch)}.get(FIXED, {})
dataset = BatchedIMUWindows() if FIXED == 'batched_dataset' else IMUWindows()
loader = torch.utils.data.DataLoader(dataset, batch_size=B, shuffle=True, drop_last=True,
                                     **loader_kw)
class HAR(torch.nn.Module):
    def __init__(self):
        super().__init__()
        conv = lambda a, b: [torch.nn.Conv1d(a, b, 5, padding=2), torch.nn.BatchNorm1d(b),
                             torch.nn.ReLU()]
        self.cnn = torch.nn.Sequential(*conv(C + 1, 64), torch.nn.MaxPool1d(2),
                                       *conv(64, 128), torch.nn.MaxPool1d(2), *conv(128, 128))
        self.spec = torch.nn.Sequential(torch.nn.Linear(C * NF, 128), torch.nn.ReLU())
        self.head = torch.nn.Linear(256, K)
    def forward(self, signal, spectrum):
        return self.head(torch.cat([self.cnn(signal).mean(-1), self.spec(spectrum)], 1))
model = HAR().to(DEVICE)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
batches = iter(loader)
def train(signal, spectrum, y):
    opt.zero_grad(set_to_none=True)
    F.cross_entropy(model(signal, spectrum), y).backward()
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
            "batched_dataset": {"about": "the Dataset's __getitems__ cuts the batch's windows "
                                         "with one index and featurises them with batched "
                                         "ops (collate_fn passes it through)",
                                "match": ["batched-dataset", "__getitems__", "batchsampler"]},
        },
        "timing": {"warmup": 8, "blocks": 5, "iters": 12},
    },
    "biencoder_search_fp32": {
        "about": "a sentence-embedding search (a MiniLM-sized post-norm encoder: 6 layers, "
                 "width 384, 12 heads, vocab 30522, 4 queries of 32 padded tokens, mean "
                 "pooling, L2 normalisation, cosine top-10 over a 50000 x 384 document "
                 "index) served in fp32 with autograd on (eval(), no no_grad)",
        "setup": """
torch.manual_seed(0)
V, D, NH, L, T, Q, NDOC = ((100, 16, 2, 1, 8, 2, 50) if DRY
                           else (30522, 384, 12, 6, 32, 4, 50000))
F = torch.nn.functional
class Layer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.out = torch.nn.Linear(D, 3 * D), torch.nn.Linear(D, D)
        self.ln1, self.ln2 = torch.nn.LayerNorm(D), torch.nn.LayerNorm(D)
        self.ff1, self.ff2 = torch.nn.Linear(D, 4 * D), torch.nn.Linear(4 * D, D)
    def forward(self, x, keep):
        n = x.shape[0]
        q, k, v = self.qkv(x).view(n, T, 3, NH, D // NH).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        x = self.ln1(x + self.out(a.transpose(1, 2).reshape(n, T, D)))
        return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))
class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tok, self.pos = torch.nn.Embedding(V, D, padding_idx=0), torch.nn.Embedding(T, D)
        self.ln = torch.nn.LayerNorm(D)
        self.layers = torch.nn.ModuleList([Layer() for _ in range(L)])
        self.register_buffer('positions', torch.arange(T))
    def forward(self, ids):
        keep = ids != 0
        x = self.ln(self.tok(ids) + self.pos(self.positions))
        for layer in self.layers:
            x = layer(x, keep[:, None, None, :])
        pooled = (x * keep[..., None]).sum(1) / keep.sum(1, keepdim=True)
        return F.normalize(pooled, dim=-1)
encoder = Encoder().to(DEVICE).eval()
index = F.normalize(torch.randn(NDOC, D, device=DEVICE), dim=-1)
if FIXED == 'bf16_inference':
    index = index.to(torch.bfloat16)
queries = []
for _ in range(8):
    ids = torch.randint(1, V, (Q, T))
    ids[torch.arange(T) >= torch.randint(T // 4, T + 1, (Q, 1))] = 0
    queries.append(ids.to(DEVICE))
seen, answers = [0], []
def next_queries():
    seen[0] += 1
    return queries[seen[0] % 8]
def search(ids):
    scores = encoder(ids) @ index.T
    return scores.topk(10, dim=1)
static_ids = queries[0].clone()
static_out = []
def _graphed():
    static_out[:] = search(static_ids)
replay = None
if FIXED == 'cuda_graph':
    with torch.no_grad():
        replay = capture(_graphed)
""",
        "base": "answers.append(search(next_queries()))\ndel answers[:-8]",
        "fixes": {
            "inference_mode": {"about": "with torch.inference_mode(): around the call",
                               "code": """
with torch.inference_mode():
    answers.append(search(next_queries()))
del answers[:-8]
""",
                               "match": ["inference-mode", "inference_mode", "no_grad"]},
            "bf16_inference": {"about": "inference_mode with bf16 autocast, the document "
                                        "index held in bf16",
                               "code": """
with torch.inference_mode(), torch.autocast(DEVICE, dtype=torch.bfloat16):
    answers.append(search(next_queries()))
del answers[:-8]
""",
                               "match": ["bf16-autocast", "bf16", "bfloat16"]},
            "cuda_graph": {"about": "the call captured once under no_grad (the queries "
                                    "copied into a static input, scores and ids cloned) and "
                                    "replayed",
                           "code": """
static_ids.copy_(next_queries())
replay()
answers.append(tuple(t.clone() for t in static_out))
del answers[:-8]
""",
                           "match": GRAPH_MATCH},
        },
        "timing": {"warmup": 20, "blocks": 5, "iters": 60},
    },
}
