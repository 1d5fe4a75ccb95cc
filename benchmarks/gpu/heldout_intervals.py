"""Each held-out GPU fix against the interval of the opportunity of its own fix family.

    PYTHONPATH=. python benchmarks/gpu/heldout_intervals.py [OUT]   # default: the H100 set

`heldout_compare.py` pairs a hand fix with the first piece of advice whose words match it;
this pairs each with the opportunity that names its family (FAMILY_OF: a CUDA graph with
`cuda-graph`, a fused optimizer with `fused-optimizer`, ...), as docs/validation.md's
held-out GPU table does, and says whether the measured gain lies inside that opportunity's
`predicted_interval`. Re-analyses the committed runs of ``OUT/truth.json`` (set
AUTOPROF_CACHE=0 to skip the cache), with ``OUT/advice_truth.json``'s fixes beside them;
writes ``OUT/intervals.json`` and prints one line per pair, then the count inside and the
median width (interval high / low).
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

from heldout_compare import with_advice_fixes

DEFAULT = Path(__file__).resolve().parents[2] / "benchmarks/validation/data/gpu_h100_heldout"
# each hand fix of the held-out set by the fix family that names it; `bf16_autocast` on the
# fp32 MLP has no opportunity of its own (the TF32 entry's hint names it) and is left out
FAMILY_OF = {
    "pinned_non_blocking": "pin-memory",
    "vectorised": "vectorise",
    "bf16_no_scaler": "bf16-autocast",
    "fused_adamw": "fused-optimizer",
    "check_every_32": "remove-sync",
    "fused": "fused-optimizer",
    "tf32": "tf32",
    "ignore_index": "remove-sync",
    "cuda_graph": "cuda-graph",
    "advice_cuda_graph": "cuda-graph",
    "advice_graph_pinned": "cuda-graph",
    "advice_bf16_graph": "cuda-graph",
    "advice_graph_check_every_32": "cuda-graph",
    "advice_tf32": "tf32",
}


def pairs(out: Path) -> list[dict[str, Any]]:
    """One row per hand fix whose family has a predicted opportunity in its program's run."""
    import autoprof

    truth = json.loads((out / "truth.json").read_text())
    if (out / "advice_truth.json").is_file():
        truth = with_advice_fixes(truth, json.loads((out / "advice_truth.json").read_text()))
    rows = []
    for name, case in truth["cases"].items():
        run = (case.get("record") or {}).get("run")
        opps = autoprof.load(out / run).summary().get("opportunities") or [] if run else []
        for label, fix in case["fixes"].items():
            family = FAMILY_OF.get(label)
            opp = next((o for o in opps if family and o.get("fix") == family
                        and isinstance(o.get("predicted_interval"), dict)), None)
            if opp is None or not fix.get("speedup"):
                continue
            band, measured = opp["predicted_interval"], float(fix["speedup"])
            rows.append({"program": name, "fix": label, "family": family,
                         "after_advice": bool(fix.get("after_advice")),
                         "measured": measured, "predicted": float(opp["predicted_speedup"]),
                         "low": float(band["low"]), "high": float(band["high"]),
                         "inside": float(band["low"]) <= measured <= float(band["high"])})
    return rows


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else DEFAULT
    rows = pairs(out)
    for r in rows:
        print(f"{r['program']:<22} {r['fix']:<28} {r['family']:<16} measured "
              f"{r['measured']:6.2f}x  predicted {r['predicted']:6.2f}x "
              f"({r['low']:.2f}-{r['high']:.2f}x) {'inside' if r['inside'] else 'OUTSIDE'}")
    inside = sum(r["inside"] for r in rows)
    width = statistics.median(r["high"] / r["low"] for r in rows) if rows else float("nan")
    print(f"{inside} of {len(rows)} inside; median width high/low {width:.2f}")
    (out / "intervals.json").write_text(json.dumps(
        {"inside": inside, "pairs": len(rows), "median_width_ratio": round(width, 4),
         "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
