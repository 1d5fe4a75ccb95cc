"""Records the CPU example run (traces/examples/cpu_mlp_train/): one SGD step of a small MLP.

Run from the repository root: `python traces/examples/record_cpu_example.py`.
"""

import torch

from autoprof import autoprof

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))


@autoprof(name="cpu_mlp_train", out_dir="traces/examples")
def train_step(x: torch.Tensor, y: torch.Tensor) -> float:
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(10):  # 3 untraced warm-up calls, then the default schedule's steps
    train_step(x, y)
autoprof.flush()
