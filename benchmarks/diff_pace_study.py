"""Could a process's own pace tell a small CPU regression from noise? A study over the
recordings `benchmarks/diff_validation.py --work DIR` keeps (docs/diff.md, "The process's
pace").

For each pair the validation judges (the unchanged program twice, or the unchanged program
and a planted change, one recording a side), the pace is the median, over the outermost ops
both runs called alike (as often, on the same input types and shapes), of B's time per step
over A's: how much slower B's process ran as a whole. The paced change is B's median step
over the pace, against A's. If the between-process noise were one factor on every op, the
paced change of the unchanged pairs would be near zero and a planted op would stand out.

    PYTHONPATH=. python benchmarks/diff_pace_study.py WORK [--out results.json]

Prints, per case, the step's change and the paced change (median and standard deviation over
the pairs), the spread of the ops' own ratios within a pair, and how many pairs' paced
change lies beyond twice the unchanged pairs' standard deviation.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

import numpy as np

import autoprof
from autoprof.analysis.diff import RunFacts, run_facts
from autoprof.analysis.diff.causes import same_call

CASES = ("same", "tanh5", "tanh10", "tanh50", "clone", "wide")


def _run_dir(work: Path, name: str) -> Path:
    return sorted((work / name).iterdir())[-1]


def _ratios(a: RunFacts, b: RunFacts) -> list[float]:
    return [ob.us_per_step / oa.us_per_step for name, oa in a.user_ops.items()
            if (ob := b.user_ops.get(name)) is not None and oa.us_per_step > 0
            and ob.us_per_step > 0 and same_call(oa, ob)]


def _pair(a: RunFacts, b: RunFacts) -> dict[str, float]:
    logs = np.log(_ratios(a, b) or [1.0])
    pace = float(np.exp(np.median(logs)))
    step = float(np.median(b.step_us)) / float(np.median(a.step_us))
    return {"step_pct": (step - 1) * 100, "pace": pace, "paced_pct": (step / pace - 1) * 100,
            "ops": len(logs), "ops_sd_pct": float(np.std(logs, ddof=1)) * 100
            if len(logs) > 1 else 0.0}


def pairs(work: Path) -> dict[str, list[dict[str, float]]]:
    """The validation's pairs (its `_cases` with one recording a side), each measured."""
    names = sorted(p.name for p in work.iterdir() if p.is_dir())
    facts = {n: run_facts(autoprof.load(_run_dir(work, n))) for n in names}
    same_a = sorted(n for n in facts if n.startswith("same_a"))
    same_b = sorted(n for n in facts if n.startswith("same_b"))
    out = {"same": [_pair(facts[a], facts[b]) for a, b in zip(same_a, same_b, strict=False)]}
    for k, case in enumerate(CASES[1:]):
        runs = sorted(n for n in facts if n.startswith(f"{case}_"))
        out[case] = [_pair(facts[same_a[(j + k) % len(same_a)]], facts[r])
                     for j, r in enumerate(runs)]
    return out


def summary(got: dict[str, list[dict[str, float]]]) -> dict[str, Any]:
    sd_same = statistics.stdev(p["paced_pct"] for p in got["same"])
    rows = {}
    for case, ps in got.items():
        rows[case] = {
            "n": len(ps),
            "step_median_pct": statistics.median(p["step_pct"] for p in ps),
            "step_sd_pct": statistics.stdev(p["step_pct"] for p in ps),
            "paced_median_pct": statistics.median(p["paced_pct"] for p in ps),
            "paced_sd_pct": statistics.stdev(p["paced_pct"] for p in ps),
            "ops_sd_median_pct": statistics.median(p["ops_sd_pct"] for p in ps),
            "paced_beyond_2sd": sum(p["paced_pct"] > 2 * sd_same for p in ps),
        }
    return {"same_paced_sd_pct": sd_same, "cases": rows, "pairs": got}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("work", type=Path)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    got = summary(pairs(args.work))
    print("| case | n | step: median (sd) | paced: median (sd) | ops' ratios sd (median) "
          "| paced > 2 sd of the unchanged |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for case, r in got["cases"].items():
        print(f"| {case} | {r['n']} | {r['step_median_pct']:+.1f}% ({r['step_sd_pct']:.1f}%) | "
              f"{r['paced_median_pct']:+.1f}% ({r['paced_sd_pct']:.1f}%) | "
              f"{r['ops_sd_median_pct']:.1f}% | {r['paced_beyond_2sd']} |")
    if args.out is not None:
        args.out.write_text(json.dumps(got, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
