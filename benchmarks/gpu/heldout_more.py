"""Four more held-out GPU programs (optimizer, matmul precision, a mask's sync, launch-bound).

Same form as ``heldout_cases.CASES`` (see ``heldout_driver.py`` for the keys).
"""

from __future__ import annotations

from heldout_driver import Case

MORE: dict[str, Case] = {
    "adamw_foreach_false": {
        "about": "a 24-block residual MLP (width 256, LayerNorm in each block, ~100 parameter "
                 "tensors) trained with AdamW(foreach=False), batch 32",
        "setup": """
W, L, B = (16, 3, 4) if DRY else (256, 24, 32)
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(W)
        self.lin = torch.nn.Linear(W, W)
    def forward(self, x):
        return x + self.lin(self.norm(x)).relu()
model = torch.nn.Sequential(*[Block() for _ in range(L)]).to(DEVICE)
kw = {None: dict(foreach=False), 'foreach': dict(foreach=True),
      'fused': dict(fused=CUDA)}[FIXED]
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, **kw)
x = torch.randn(B, W, device=DEVICE)
""",
        "base": """
opt.zero_grad(set_to_none=True)
model(x).square().mean().backward()
opt.step()
""",
        "fixes": {
            "foreach": {"about": "AdamW(..., foreach=True) (torch's default)",
                        "match": ["foreach"]},
            "fused": {"about": "AdamW(..., fused=True)",
                      "match": ["fused-optimizer", "fused=true", "fused adam",
                                "fused optimizer"]},
        },
    },
    "fp32_mlp_no_tf32": {
        "about": "an fp32 MLP (4096 wide, batch 2048) trained with matmul precision 'highest' "
                 "(TF32 off, torch's default)",
        "setup": """
torch.set_float32_matmul_precision('high' if FIXED == 'tf32' else 'highest')
W, B = (32, 8) if DRY else (4096, 2048)
mlp = torch.nn.Sequential(torch.nn.Linear(W, W), torch.nn.GELU(),
                          torch.nn.Linear(W, W)).to(DEVICE)
x = torch.randn(B, W, device=DEVICE)
def bf16_step():
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        out = mlp(x)
    out.float().square().mean().backward()
""",
        "base": "mlp(x).square().mean().backward()",
        "fixes": {
            "tf32": {"about": "torch.set_float32_matmul_precision('high') (TF32)",
                     "match": ["tf32", "matmul_precision", "float32_matmul"]},
            "bf16_autocast": {"about": "bf16 autocast around the forward",
                              "code": "bf16_step()", "match": ["bf16", "bfloat16"]},
        },
        "timing": {"warmup": 5, "blocks": 5, "iters": 10},
    },
    "masked_token_loss": {
        "about": "a token model's loss over the non-padding positions picked with a boolean "
                 "mask (logits[mask]: a sync on the mask's count) between forward and backward",
        "setup": """
T, D, V = (32, 16, 64) if DRY else (4096, 1024, 8192)
emb = torch.nn.Embedding(V, D).to(DEVICE)
trunk = torch.nn.Sequential(torch.nn.Linear(D, D), torch.nn.GELU(),
                           torch.nn.Linear(D, D)).to(DEVICE)
out = torch.nn.Linear(D, V).to(DEVICE)
tokens = torch.randint(0, V, (T,), device=DEVICE)
targets = torch.randint(0, V, (T,), device=DEVICE)
mask = torch.rand(T, device=DEVICE) > 0.2
F = torch.nn.functional
def logits():
    return out(trunk(emb(tokens)))
""",
        "base": "F.cross_entropy(logits()[mask], targets[mask]).backward()",
        "fixes": {
            "ignore_index": {
                "about": "cross_entropy over every position with ignore_index for the padding",
                "code": "F.cross_entropy(logits(), torch.where(mask, targets, -100), "
                        "ignore_index=-100).backward()",
                "match": ["mask", "nonzero", "sync"]},
        },
    },
    "launch_bound_mlp": {
        "about": "inference of a 16-layer MLP (width 256) at batch 4 under no_grad: each "
                 "layer's kernels take less time than their launches",
        "setup": """
W, L = (16, 3) if DRY else (256, 16)
layers = []
for _ in range(L):
    layers += [torch.nn.Linear(W, W), torch.nn.GELU()]
mlp = torch.nn.Sequential(*layers).to(DEVICE).eval()
x = torch.randn(4, W, device=DEVICE)
graphed = None
if CUDA and FIXED == 'cuda_graph':
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                mlp(x)
        torch.cuda.current_stream().wait_stream(s)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = mlp(x)
    graphed = graph
def replay():
    if graphed is None:
        with torch.no_grad():
            return mlp(x)
    graphed.replay()
    return static_out
""",
        "base": """
with torch.no_grad():
    y = mlp(x)
""",
        "fixes": {
            "cuda_graph": {"about": "capture the forward once in a CUDA graph, replay it",
                           "code": "y = replay()",
                           "match": ["cuda-graph", "cuda graph", "reduce-overhead"]},
        },
        "timing": {"warmup": 20, "blocks": 5, "iters": 50},
    },
}
