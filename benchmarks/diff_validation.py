"""How often `autoprof diff` is right, on CPU: false alarms and planted regressions.

Records a small CPU training-style step (two linear layers, a softmax, a loss) many times
with `@autoprof`, each recording in its own fresh process:

- ``same``: the program unchanged, ``--pairs`` recordings per side; each pair (A_i, B_i) must
  give ``no significant change``;
- planted changes, each recorded ``--planted`` times and diffed against an unchanged
  recording: an extra op costing about 5%, 10% and 50% of the step (``aten::tanh`` over a
  tensor sized for it), an extra copy (``aten::clone`` of the activations), and the second
  layer in float64 instead of float32 (``aten::mm`` on other input types: ``@`` without a bias
  is ``aten::mm``, never ``aten::addmm``). Each must give
  ``slower`` with the planted op first in the diff's ``why``.

Usage::

    python benchmarks/diff_validation.py --out /tmp/diffval [--pairs 20] [--planted 10]
    python benchmarks/diff_validation.py --out /tmp/diffval --evaluate   # diff what is there

Prints one table (rates, and the median planted change measured) and writes
``results.json`` into ``--out``. docs/diff.md holds the latest table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

# variant -> (planted op, extra-op cost as a share of the step (for tanh), description)
PLANTED = {
    "tanh5": ("aten::tanh", 0.05, "an extra op costing ~5% of the step"),
    "tanh10": ("aten::tanh", 0.10, "an extra op costing ~10% of the step"),
    "tanh50": ("aten::tanh", 0.50, "an extra op costing ~50% of the step"),
    "clone": ("aten::clone", 0.0, "an extra copy of the activations"),
    "fp64": ("aten::mm", 0.0, "the second layer in float64 instead of float32"),
}
STEPS = 12

PROGRAM = r"""
import sys, torch
from autoprof import autoprof
torch.set_num_threads(1)
variant, out, name = sys.argv[1], sys.argv[2], sys.argv[3]
torch.manual_seed(0)
x = torch.randn(256, 512)
w1 = torch.randn(512, 512) / 23
w2 = torch.randn(512, 256) / 23
w2_64 = w2.double()
extra = torch.randn(int(sys.argv[4]))

@autoprof(name=name, out_dir=out, warmup_calls=3,
          schedule=dict(wait=1, warmup=1, active=STEPS))
def step(x):
    h = torch.relu(x @ w1)
    if variant.startswith("tanh"):
        torch.tanh(extra)
    if variant == "clone":
        h = h.clone()
    y = (h.double() @ w2_64).float() if variant == "fp64" else h @ w2
    return torch.log_softmax(y, dim=1).mean()

for _ in range(3 + 1 + 1 + STEPS):
    step(x)
""".replace("STEPS", str(STEPS))


def _tanh_elements(share: float) -> int:
    """Elements of tanh costing about ``share`` of the unchanged step (calibrated once)."""
    import time

    import torch

    torch.set_num_threads(1)
    x, w1, w2 = torch.randn(256, 512), torch.randn(512, 512), torch.randn(512, 256)

    def step() -> None:
        torch.log_softmax(torch.relu(x @ w1) @ w2, dim=1).mean()

    def timed(fn: object, n: int = 50) -> float:
        for _ in range(5):
            fn()  # type: ignore[operator]
        t0 = time.perf_counter()
        for _ in range(n):
            fn()  # type: ignore[operator]
        return (time.perf_counter() - t0) / n

    big = torch.randn(1_000_000)
    per_element_s = timed(lambda: torch.tanh(big)) / big.numel()
    return max(1, int(share * timed(step) / per_element_s))


def _record(out: Path, variant: str, name: str, elements: int) -> None:
    subprocess.run([sys.executable, "-c", PROGRAM, variant, str(out), name, str(elements)],
                   check=True)


def record(out: Path, pairs: int, planted: int) -> None:
    sizes = {v: _tanh_elements(share) if share else 1 for v, (_, share, _) in PLANTED.items()}
    for i in range(pairs):
        _record(out, "same", f"same_a{i:02d}", 1)
        _record(out, "same", f"same_b{i:02d}", 1)
    for i in range(planted):
        for variant in PLANTED:
            _record(out, variant, f"{variant}_{i:02d}", sizes[variant])


def _run_dir(out: Path, name: str) -> Path:
    return sorted((out / name).iterdir())[-1]


def evaluate(out: Path) -> dict[str, object]:
    import autoprof
    from autoprof.analysis.diff import diff

    def one(a: str, b: str) -> tuple[str, str, float | None]:
        d = diff(autoprof.load(_run_dir(out, a)), autoprof.load(_run_dir(out, b)))
        first = d.why[0].name if d.why else ""
        return d.verdict, first, None if d.step is None else d.step.change_pct

    names = sorted(p.name for p in out.iterdir() if p.is_dir())
    pairs = sorted({n[len("same_a"):] for n in names if n.startswith("same_a")})
    same = [one(f"same_a{i}", f"same_b{i}") for i in pairs]
    results: dict[str, object] = {
        "same": {"pairs": len(same),
                 "no_significant_change": sum(v == "no significant change" for v, _, _ in same),
                 "changes_pct": [c for _, _, c in same]}}
    for variant, (op, _, text) in PLANTED.items():
        runs = sorted(n for n in names if n.startswith(f"{variant}_"))
        rows = [one(f"same_a{pairs[k % len(pairs)]}", r) for k, r in enumerate(runs)]
        results[variant] = {
            "what": text, "planted_op": op, "recordings": len(rows),
            "slower": sum(v == "slower" for v, _, _ in rows),
            "slower_and_cause_first": sum(v == "slower" and f == op for v, f, _ in rows),
            "changes_pct": [c for _, _, c in rows]}
    return results


def _table(results: dict[str, object]) -> str:
    import statistics

    lines = ["| case | recordings | expected verdict | right | median change |",
             "| --- | ---: | --- | ---: | ---: |"]
    same = results["same"]
    assert isinstance(same, dict)
    lines.append(f"| same program | {same['pairs']} pairs | no significant change | "
                 f"{same['no_significant_change']} | "
                 f"{statistics.median(same['changes_pct'] or [0]):+.1f}% |")
    for variant in PLANTED:
        row = results[variant]
        assert isinstance(row, dict)
        changes = [c for c in row["changes_pct"] if c is not None]
        lines.append(f"| {row['what']} | {row['recordings']} | slower, {row['planted_op']} "
                     f"first | {row['slower_and_cause_first']} | "
                     f"{statistics.median(changes or [0]):+.1f}% |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pairs", type=int, default=20)
    parser.add_argument("--planted", type=int, default=10)
    parser.add_argument("--evaluate", action="store_true", help="only diff what --out holds")
    args = parser.parse_args()
    if not args.evaluate:
        args.out.mkdir(parents=True, exist_ok=True)
        record(args.out, args.pairs, args.planted)
    results = evaluate(args.out)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    print(_table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
