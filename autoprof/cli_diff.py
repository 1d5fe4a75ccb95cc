"""``autoprof diff BEFORE AFTER``: faster, slower or the same, how sure, and why.

Exit status, for CI: 0 when there is no regression beyond ``--gate``, 1 when B is
significantly slower than A by more than the gate (the lower end of the 95% interval of the
step time's change is above it), 2 for bad input or runs that cannot be compared, including
a run whose step times cannot be read (missing, negative, absurd or text: too few steps),
with one line naming it: a gate never passes a run it could not read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from autoprof.cli_common import EXIT_BAD_INPUT, error_line, say


def cmd_diff(args: argparse.Namespace) -> int:
    from autoprof.analysis import TraceError
    from autoprof.analysis.diff import diff, exit_status, render_markdown, render_text

    for path in (args.before, args.after):
        if not Path(path).exists():
            return error_line(path, "no such file or directory")
    try:
        floor = {} if args.noise_floor is None else {"noise_floor_pct": args.noise_floor}
        result = diff(args.before, args.after, **floor)
    except TraceError as err:
        say(f"autoprof: error: {err}")
        return EXIT_BAD_INPUT
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), allow_nan=False) + "\n")
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(result))
    else:
        sys.stdout.write(render_text(result))
    judged = result.judged
    if judged is not None and judged.verdict == "too few steps":  # never a silent pass
        return error_line(_short_side(args.before, args.after, judged.samples_a,
                                      judged.samples_b),
                          f"its step times cannot be read or are too few ({judged.reason}); "
                          f"not judged, exit {EXIT_BAD_INPUT}")
    return exit_status(result, args.gate)


def _short_side(before: str, after: str, samples_a: int, samples_b: int) -> str:
    """The run (or runs) whose readable steps are fewer than a verdict needs."""
    from autoprof.analysis.diff.significance import MIN_STEPS

    short = [p for p, n in ((before, samples_a), (after, samples_b)) if n < MIN_STEPS]
    return " and ".join(short or [after])


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a percentage: {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be a percentage of 0 or more: {text!r}")
    return value


def add_diff_parser(sub: Any) -> None:
    """The ``diff`` subcommand, on the CLI's subparsers."""
    parser = sub.add_parser(
        "diff", help="is AFTER faster, slower or the same as BEFORE, how sure, and why "
                     "(exit 1 on a regression beyond --gate, 2 when not comparable)")
    parser.add_argument("before", help="the baseline: a run folder, a trace, or a folder of "
                                       "several run folders of one program (repeats)")
    parser.add_argument("after", help="the run (or repeats) to judge against it")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--format", choices=("text", "markdown"), default="text",
                        help="text (default) or GitHub-flavoured markdown for a pull request "
                             "or a CI job summary (--json wins)")
    parser.add_argument("--gate", type=_percent, default=None, metavar="PCT",
                        help="fail (exit 1) only when the step time is significantly slower "
                             "by more than PCT percent (default: any significant slowdown)")
    parser.add_argument("--noise-floor", type=_percent, default=None, metavar="PCT",
                        help="the spread between runs of one program assumed with one run a "
                             "side (sd of a run's median step, percent; default 13 on CPU, 7 "
                             "on CUDA, measured in docs/diff.md): the least taken; repeats on "
                             "each side measure it instead")
    parser.set_defaults(func=cmd_diff)
