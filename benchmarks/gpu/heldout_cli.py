"""The command line shared by the held-out program sets (``heldout_cases.py`` on the GPU,
``../cpu_heldout.py`` on the CPU): time every program and fix, record, or ``--compare``."""

from __future__ import annotations

import argparse
from typing import Any

from heldout_compare import compare
from heldout_driver import Case, measure


def main(argv: list[str] | None, about: str, cases: dict[str, Case], device: str,
         defaults: dict[str, float]) -> dict[str, Any]:
    """Parse `argv` and run `cases` on `device` ("cpu" or "cuda"; a dry run is on the CPU);
    `defaults` holds `rounds`, `budget_s` and `record_calls`."""
    parser = argparse.ArgumentParser(description=about)
    parser.add_argument("--out", required=True, help="folder for truth.json, runs/, compare.*")
    parser.add_argument("--compare", action="store_true",
                        help="read the recorded runs' advice beside the measured gains")
    parser.add_argument("--cases", nargs="*", help="only these programs")
    parser.add_argument("--rounds", type=int, default=int(defaults["rounds"]))
    parser.add_argument("--budget-s", type=float, default=defaults["budget_s"],
                        help="no timing round starts past this (the first always runs)")
    parser.add_argument("--dry-run", action="store_true",
                        help="every program on the CPU at tiny sizes, one round")
    parser.add_argument("--no-record", action="store_true")
    parser.add_argument("--resume", action="store_true",
                        help="add --rounds more rounds to OUT/truth.json (no new recording)")
    parser.add_argument("--record-calls", type=int, default=int(defaults["record_calls"]))
    parser.add_argument("--timeout-s", type=float, default=90.0)
    args = parser.parse_args(argv)
    if args.compare:
        return compare(args.out)
    chosen = {k: v for k, v in cases.items() if not args.cases or k in args.cases}
    return measure(chosen, {
        "out": args.out, "device": "cpu" if args.dry_run else device, "dry": args.dry_run,
        "rounds": 1 if args.dry_run else args.rounds, "budget_s": args.budget_s,
        "record": not args.no_record, "record_calls": args.record_calls,
        "timeout_s": args.timeout_s, "resume": args.resume})
