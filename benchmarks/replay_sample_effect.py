"""How far replaying a sample of each rank's steps moves the summary: the committed runs
whose reference summary holds a replayed prediction, summarised with the replay capped at
``--max-steps`` reported steps in blocks of ``--block-steps`` (metrics/replay/sample.py),
against references of the whole replay written by ``summary_identity.py --write``.

The committed runs have fewer steps than the real sample replays, so their summaries are the
whole replay's (``summary_identity.py`` checks that); a cap far below their step count (4 of
the 12 steps of the H200 diff runs) shows what sampling does to real, unevenly timed steps.
A rank with no more steps than the sample would replay is still replayed whole.

    python benchmarks/summary_identity.py --write /tmp/refs tests/analysis/diff/data/h200 \
        tests/analysis/diff/data/h200_planted
    python benchmarks/replay_sample_effect.py --against /tmp/refs --max-steps 4 \
        --block-steps 1 tests/analysis/diff/data/h200 tests/analysis/diff/data/h200_planted \
        [--out F.json]

Prints one line per run whose summary differs (verdict, top pick, the largest relative
change of any ``predicted_speedup``), then the totals.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from summary_identity import reference_name, run_paths, summary_of  # noqa: E402


def _picks(summary: Any) -> tuple[Any, Any, dict[str, float]]:
    """(verdict, top pick as (cause, fix), each cause's predicted_speedup)."""
    if not isinstance(summary, dict):
        return None, None, {}
    opps = summary.get("opportunities") or []
    top = (opps[0].get("cause"), opps[0].get("fix")) if opps else None
    speedups = {str(o.get("cause")): float(o["predicted_speedup"]) for o in opps
                if isinstance(o.get("predicted_speedup"), int | float)}
    return summary.get("verdict"), top, speedups


def _change(ref: dict[str, float], got: dict[str, float]) -> float:
    """The largest |got / ref - 1| over the causes predicted on both sides (inf when the
    predicted causes differ)."""
    if set(ref) != set(got):
        return float("inf")
    return max((abs(got[k] / ref[k] - 1.0) for k in ref if ref[k]), default=0.0)


def _relative(path: str) -> str:
    """`path` relative to the repository where it lies inside it."""
    try:
        return str(Path(path).relative_to(HERE.parent))
    except ValueError:
        return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--against", type=Path, required=True)
    parser.add_argument("--max-steps", type=int, required=True)
    parser.add_argument("--block-steps", type=int, required=True)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    import autoprof.analysis.diagnose.predictions as predictions
    import autoprof.analysis.metrics.replay.sample as sample

    predictions.MAX_STEPS = args.max_steps  # type: ignore[misc]
    sample.BLOCK_STEPS = args.block_steps  # type: ignore[misc]
    rows = []
    for path in run_paths([r.resolve() for r in args.roots]):
        ref = json.loads((args.against / reference_name(path)).read_text())["summary"]
        if not _picks(ref)[2]:
            continue  # no replayed prediction: sampling cannot change it
        got = summary_of(path)
        (v0, t0, s0), (v1, t1, s1) = _picks(ref), _picks(got)
        row = {"path": _relative(path), "identical": got == ref, "verdict_same": v0 == v1,
               "top_same": t0 == t1, "largest_change": _change(s0, s1)}
        rows.append(row)
        if not row["identical"]:
            print(f"{path}: verdict {v0}->{v1}, top {t0}->{t1}, "
                  f"largest predicted_speedup change {row['largest_change']:.2e}")
    worst = max((r["largest_change"] for r in rows), default=0.0)
    same = sum(r["identical"] for r in rows)
    print(f"{len(rows)} runs with a replayed prediction; identical {same}; "
          f"verdict changed {sum(not r['verdict_same'] for r in rows)}; top pick changed "
          f"{sum(not r['top_same'] for r in rows)}; largest predicted_speedup change {worst:.2e}")
    if args.out:  # null: the two sides predict different causes
        kept = [{**r, "largest_change": r["largest_change"]
                 if r["largest_change"] != float("inf") else None} for r in rows]
        args.out.write_text(json.dumps({"max_steps": args.max_steps,
                                        "block_steps": args.block_steps, "runs": kept},
                                       indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
