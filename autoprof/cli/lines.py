"""``autoprof lines RUN [--json] [--top N]``: the run's top source lines by time per step
(self CPU, GPU work launched, syncs), from its source-lines trace (docs/lines.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_BAD_INPUT = 2


def add_lines_parser(sub: Any) -> None:
    lines = sub.add_parser("lines", help="the top source lines of a run by time per step")
    lines.add_argument("path", help="a run folder recorded by autoprof")
    lines.add_argument("--json", action="store_true", help="print one JSON object")
    lines.add_argument("--top", type=int, default=20, metavar="N", help="lines shown (20)")
    lines.set_defaults(func=cmd_lines)


def cmd_lines(args: argparse.Namespace) -> int:
    from autoprof.analysis import TraceError, load
    from autoprof.analysis.report.lines import line_rows, render_lines

    path = Path(args.path)
    try:
        run = load(path)
    except (TraceError, OSError) as err:
        print(f"autoprof: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    lines = run.analysis.source_lines
    if args.json:
        out = {"path": str(path), "has_lines": lines.attribution.has_lines,
               "match_pct": lines.attribution.match_pct if lines.available else None,
               "lines": line_rows(lines, args.top) if lines.available else []}
        sys.stdout.write(json.dumps(out, allow_nan=False) + "\n")
    else:
        print(render_lines(lines, str(path), args.top))
    return 0
