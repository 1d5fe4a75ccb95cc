"""The shown predictions judged by the fixes timed in the recording's own process.

`record.py --same-process-truth` records a workload, then times its baseline and every fix in
the same process after autoprof's window. This script gathers such recordings (each
``--out DIR`` holding ``record.json`` and ``runs/``) into one folder of the form
``as_shown.py`` reads (``ground_truth.json`` and ``runs/``), with the same-process timings as
the ground truth, and prints ``as_shown.py``'s report of it:

    PYTHONPATH=. python benchmarks/gpu/truth/same_process.py OUT DIR [DIR ...]

The summary paces its replay to the untraced calls of the recording's process; a fix timed in
another process runs at that process's pace (up to 2x apart on one H200 host). This judge
takes that difference out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import as_shown  # noqa: E402


def gather(out: Path, dirs: list[Path]) -> Path:
    """``out`` as one truth folder: each recording's runs and its same-process timings."""
    workloads = {}
    for d in dirs:
        record = json.loads((d / "record.json").read_text())
        truth = record.pop("same_process_truth", None)
        if truth is None:
            continue
        name = record["workload"]
        shutil.copytree(d / "runs" / name, out / "runs" / name, dirs_exist_ok=True)
        workloads[name] = {"ground_truth": truth, "record": record}
    (out / "ground_truth.json").write_text(json.dumps({"workloads": workloads}, indent=1))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("dirs", type=Path, nargs="+")
    args = parser.parse_args()
    return as_shown.main([str(gather(args.out, args.dirs))])


if __name__ == "__main__":
    raise SystemExit(main())
