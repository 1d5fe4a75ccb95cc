"""Does this checkout render each run's report as another revision does? Text, Markdown, HTML.

For every run under the paths (default: summary_identity's roots, tests/data and every
tests/analysis/**/data, plus traces/examples), the summary is computed once with this
checkout (``load(path).summary()``, caches beside traces off; a run that does not load is
counted and left out), read into the typed report (``Report.from_dict``) and rendered in each
format (``report.render``: the text ``autoprof summary`` prints, ``--format markdown``, the
notebook's HTML) by both sides: the other revision (its tree from ``git archive``, in a fresh
process) and this checkout. Each pair must be byte-identical; each run and format that
differs is printed with its first differing line, and the script exits 1.

    python benchmarks/text_identity.py --rev main
    python benchmarks/text_identity.py --rev main --keep /tmp/summaries.json   # reuse them

The summaries are the renderer's input, the same on both sides: the check is of the renderer
alone (benchmarks/summary_identity.py checks the summaries themselves). Each run is also
rendered once more with what no committed run holds (``variant``: ranks without a trace, no
steps, what-if rows with an interval that cannot tell, a replay's prediction and only a
measured speedup, a name with control characters), as ``<path>#variant``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from summary_identity import REPO, checkout, default_roots, run_paths, summary_of


def summaries(paths: list[str]) -> dict[str, Any]:
    """Each run's summary, keyed by its path; runs that did not load are left out."""
    out = {}
    for path in paths:
        summary = summary_of(path)
        if not (set(summary) == {"error", "message"}):
            out[path] = summary
    return out


def variant(summary: dict[str, Any]) -> dict[str, Any]:
    """`summary` with the keys no committed run has filled (each kept to its type)."""
    finding = next((d["id"] for d in summary["diagnostics"]), "cpu-only")
    rows = [{"fix": "compile", "applicable": True, "status": "cannot tell", "baseline_us": 100.0,
             "fixed_us": 95.0, "speedup": 1.05, "speedup_low": 0.9, "speedup_high": 1.2,
             "outputs_match": None, "max_abs_error": 1.5e-7, "setup_s": 2.5,
             "break_even_calls": 500_000, "settle": "about 40 more samples a side",
             "predicted_speedup": 1.4, "prediction_error_pct": 33.3, "prediction_missed": True,
             "fixed_verdict": "gpu-bound", "suggested_by": [finding]},
            {"fix": "cuda-graph", "applicable": True, "status": "no change",
             "measured_speedup": 1.01, "baseline_us": 100.0, "fixed_us": 99.0,
             "speedup_low": 0.97, "outputs_match": False, "suggested_by": ["not-a-finding"]}]
    return {**summary, "name": f"{summary['name']}\x1b[2J\nrenamed", "missing_ranks": [3, 5],
            "steps": [], "whatif": [*summary["whatif"], *rows]}


def with_variants(loaded: dict[str, Any]) -> dict[str, Any]:
    return {**loaded, **{f"{p}#variant": variant(s) for p, s in loaded.items()}}


FORMATS = ("text", "markdown", "html")


def rendered(loaded: dict[str, Any]) -> dict[str, str]:
    """Each run in each format (keyed ``path|format``), with the autoprof this process
    imports: the summary read into its ``Report``, then ``report.render``."""
    from autoprof.analysis.report.model import Report
    from autoprof.analysis.report.render import render

    out = {}
    for path, summary in loaded.items():
        report = Report.from_dict(summary, where=path)
        out |= {f"{path}|{fmt}": render(report, fmt) for fmt in FORMATS}
    return out


def render_old(summaries_file: Path, out: Path) -> None:
    """The renders of the autoprof on PYTHONPATH (the revision's side)."""
    out.write_text(json.dumps(rendered(json.loads(summaries_file.read_text()))))


def first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a.splitlines(), b.splitlines(), strict=False)):
        if x != y:
            return f"line {i + 1}: {x!r} != {y!r}"
    return f"lengths {len(a)} != {len(b)} characters"


def compare(rev: str, loaded: dict[str, Any], folder: Path) -> int:
    """Print each run whose text differs between `rev` and this checkout; how many do."""
    checkout(rev, folder)
    given, texts = folder / "summaries.json", folder / "texts.json"
    given.write_text(json.dumps(loaded))
    env = {**os.environ, "PYTHONPATH": str(folder / "tree"), "AUTOPROF_CACHE": "0"}
    subprocess.run([sys.executable, __file__, "--render-old", str(given), str(texts)],
                   check=True, env=env)
    old, new = json.loads(texts.read_text()), rendered(loaded)
    differ = 0
    for key in new:
        if old[key].encode() != new[key].encode():
            differ += 1
            print(f"DIFFERS {key}: {first_difference(old[key], new[key])}")
    print(f"{len(loaded)} runs x {len(FORMATS)} formats: {len(new) - differ} renders "
          f"byte-identical, {differ} differ "
          f"({sum(len(t) for t in new.values()):,} characters rendered per side)")
    return differ


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path, help="folders to search for runs")
    parser.add_argument("--rev", default="main", help="the revision to compare with")
    parser.add_argument("--keep", type=Path, help="summaries file: read if it exists, else "
                        "written (the summaries take minutes; the renders a second)")
    parser.add_argument("--render-old", nargs=2, type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ["AUTOPROF_CACHE"] = "0"
    if args.render_old:
        render_old(*args.render_old)
        return 0
    if args.keep is not None and args.keep.exists():
        loaded = json.loads(args.keep.read_text())
    else:
        roots = [r.resolve() for r in args.roots] or [*default_roots(),
                                                      REPO / "traces" / "examples"]
        paths = run_paths(roots)
        loaded = summaries(paths)
        print(f"{len(paths)} runs found, {len(paths) - len(loaded)} did not load")
        if args.keep is not None:
            args.keep.write_text(json.dumps(loaded))
    with tempfile.TemporaryDirectory(prefix="text-identity-") as tmp:
        return 1 if compare(args.rev, with_variants(loaded), Path(tmp)) else 0


if __name__ == "__main__":
    sys.exit(main())
