"""The one-command form of a held-out GPU set (``heldout_deleting.py``, ``heldout_catalogue.py``).

One command on one GPU times every program and fix without the profiler and records each
program as written once (``heldout_driver.measure``), leaving in OUT a small ``truth.json``
and the run folders as one ``runs.tar.gz`` (one file to bring back). ``--analyse`` afterwards,
on any machine with the analysis (CPU is enough), unpacks the runs under ``--into`` (default
OUT) and sets autoprof's predictions beside the truth (``heldout_compare.compare``).
``--tiny`` runs every program on the CPU at tiny sizes, one round, recorded and tarred the
same way: a check that the programs and the pipeline run, not a measurement.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tarfile
from pathlib import Path
from typing import Any

from heldout_compare import compare
from heldout_driver import Case, measure

PART_BYTES = 15 * 2**20
"""The largest file written to bring back: the device returns files of at most 16 MiB."""
# a one-command set: two rounds at most, no round started that would end past 470 s (one call)
DEFAULTS = {"rounds": 2, "budget_s": 470.0, "record_calls": 20, "timeout_s": 90.0}


def tar_runs(out: Path, part_bytes: int = PART_BYTES) -> None:
    """OUT/runs/ as OUT/runs.tar.gz, the folder removed; a tar larger than `part_bytes` is
    cut into ``runs.tar.gz.00``, ``.01``, ... of at most that size (``join_parts`` rejoins)."""
    runs = out / "runs"
    if not runs.is_dir():
        return
    whole = out / "runs.tar.gz"
    with tarfile.open(whole, "w:gz") as tar:
        tar.add(runs, arcname="runs")
    shutil.rmtree(runs)
    if whole.stat().st_size <= part_bytes:
        return
    with whole.open("rb") as source:
        for number, chunk in enumerate(iter(lambda: source.read(part_bytes), b"")):
            (out / f"runs.tar.gz.{number:02d}").write_bytes(chunk)
    whole.unlink()


def join_parts(out: Path) -> None:
    """``OUT/runs.tar.gz`` again from the parts ``tar_runs`` cut it into, if it was cut."""
    parts = sorted(out.glob("runs.tar.gz.[0-9][0-9]"))
    if parts and not (out / "runs.tar.gz").is_file():
        with (out / "runs.tar.gz").open("wb") as whole:
            for part in parts:
                whole.write(part.read_bytes())


def analyse(out: Path, into: Path) -> dict[str, Any]:
    """The recorded runs' predictions beside the truth, written under `into`."""
    into.mkdir(parents=True, exist_ok=True)
    if into.resolve() != out.resolve():
        shutil.copyfile(out / "truth.json", into / "truth.json")
    join_parts(out)
    if not (into / "runs").is_dir() and (out / "runs.tar.gz").is_file():
        with tarfile.open(out / "runs.tar.gz") as tar:
            tar.extractall(into, filter="data")
    elif not (into / "runs").is_dir() and (out / "runs").is_dir():  # a call cut before its tar
        shutil.copytree(out / "runs", into / "runs")
    return compare(str(into))


def main(argv: list[str] | None, about: str, cases: dict[str, Case],
         defaults: dict[str, float]) -> dict[str, Any]:
    """Parse `argv` and time, record and tar `cases` on the GPU (the CPU with ``--tiny``), or
    ``--analyse`` a finished OUT; `defaults` holds `rounds`, `budget_s`, `record_calls` and
    `timeout_s`."""
    parser = argparse.ArgumentParser(description=about)
    parser.add_argument("--out", required=True, help="truth.json and runs.tar.gz")
    parser.add_argument("--analyse", action="store_true",
                        help="predictions beside the truth (any machine, CPU)")
    parser.add_argument("--into", help="where --analyse unpacks and writes (default OUT)")
    parser.add_argument("--tiny", action="store_true",
                        help="every program on the CPU at tiny sizes, one round")
    parser.add_argument("--cases", nargs="*", help="only these programs")
    parser.add_argument("--rounds", type=int, default=int(defaults["rounds"]))
    parser.add_argument("--budget-s", type=float, default=defaults["budget_s"],
                        help="no timing round starts that would end past this")
    parser.add_argument("--resume", action="store_true",
                        help="add rounds to OUT/truth.json (the programs are not recorded again)")
    parser.add_argument("--record-only", action="store_true",
                        help="record the programs into OUT/truth.json's cases, timing nothing")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if args.analyse:
        return analyse(out, Path(args.into) if args.into else out)
    chosen = {k: v for k, v in cases.items() if not args.cases or k in args.cases}
    truth = measure(chosen, {
        "out": str(out), "device": "cpu" if args.tiny else "cuda", "dry": args.tiny,
        "rounds": 1 if args.tiny else args.rounds, "budget_s": args.budget_s,
        "record": True, "record_calls": int(defaults["record_calls"]),
        "timeout_s": defaults["timeout_s"], "resume": args.resume,
        "record_only": args.record_only})
    tar_runs(out)
    print(f"wrote {out / 'truth.json'} and {out / 'runs.tar.gz'} "
          f"({os.path.getsize(out / 'runs.tar.gz') / 1e6:.1f} MB)"
          if (out / "runs.tar.gz").is_file() else f"wrote {out / 'truth.json'}")
    return truth
