"""``autoprof diff BEFORE AFTER``: faster, slower or the same, how sure, and why.

Exit status, for CI, with ``--gate PCT`` (analysis/diff/gate.py): 0 pass (the 95% interval of
the change lies at or below PCT), 1 fail (it lies above), 3 cannot tell (it holds PCT; with
``--cannot-tell-passes``, 0); without a gate, 1 when B is significantly slower, else 0; 2 for
bad input or runs that cannot be compared, including
a run whose step times cannot be read (missing, negative, absurd or text: too few steps, or
fewer readable than its manifest says it recorded),
with one line naming it: a gate never passes a run it could not read.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from autoprof.cli.common import EXIT_BAD_INPUT, error_line, say


def cmd_diff(args: argparse.Namespace) -> int:
    from autoprof.analysis import TraceError
    from autoprof.analysis.diff import (
        diff,
        exit_status,
        gate_answer,
        render_markdown,
        render_text,
    )

    for path in (args.before, args.after):
        if not Path(path).exists():
            return error_line(path, "no such file or directory")
    try:
        floor = {} if args.noise_floor is None else {"noise_floor_pct": args.noise_floor}
        result = diff(args.before, args.after, **floor)
    except TraceError as err:
        say(f"autoprof: error: {err}")
        return EXIT_BAD_INPUT
    found = None if args.gate is None else gate_answer(result, args.gate)
    if args.json:
        obj = result.to_json()
        if found is not None:
            obj["gate"] = found.to_json()
        sys.stdout.write(json.dumps(obj, allow_nan=False) + "\n")
    else:
        text = render_markdown(result) if args.format == "markdown" else render_text(result)
        sys.stdout.write(text + (f"\n{found.text}\n" if found is not None else ""))
    judged = result.judged
    if judged is not None and judged.verdict == "too few steps":  # never a silent pass
        sides = dict(zip("AB", (args.before, args.after), strict=True))
        short = (" and ".join(sides[s] for s in result.unreadable_sides)
                 or _short_side(args.before, args.after, judged.samples_a, judged.samples_b))
        return error_line(short,
                          f"its step times cannot be read or are too few ({judged.reason}); "
                          f"not judged, exit {EXIT_BAD_INPUT}")
    return exit_status(result, args.gate, args.cannot_tell_passes)


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
                     "(with --gate: 0 pass, 1 fail, 3 cannot tell; 2 when not comparable)")
    parser.add_argument("before", help="the baseline: a run folder, a trace, or a folder of "
                                       "several run folders of one program (repeats)")
    parser.add_argument("after", help="the run (or repeats) to judge against it")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--format", choices=("text", "markdown"), default="text",
                        help="text (default) or GitHub-flavoured markdown for a pull request "
                             "or a CI job summary (--json wins)")
    parser.add_argument("--gate", type=_percent, default=None, metavar="PCT",
                        help="pass (exit 0) when the change's 95%% interval lies at or below "
                             "PCT percent, fail (exit 1) when it lies above, cannot tell "
                             "(exit 3) when it holds PCT; without --gate, exit 1 on any "
                             "significant slowdown")
    parser.add_argument("--cannot-tell-passes", action="store_true",
                        help="with --gate: exit 0 when the runs cannot tell (the answer is "
                             "still printed)")
    parser.add_argument("--noise-floor", type=_percent, default=None, metavar="PCT",
                        help="the spread between runs of one program assumed with one run a "
                             "side (sd of a run's median step, percent; default 13 on CPU, 7 "
                             "on CUDA, measured in docs/diff.md): the least taken; repeats on "
                             "each side measure it instead")
    parser.set_defaults(func=cmd_diff)
