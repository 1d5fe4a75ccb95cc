"""Time of the ops table and the summary against the nesting depth of same-name ops.

    .venv/bin/python benchmarks/nesting_depth.py [--depths 10000,20000,40000,100000]

Writes one trace per depth (recursion: ``aten::rec`` nested N deep, each the only child of
the one above, which torch's table folds into one row) and times ``load``, ``ops()`` and
``summary()`` in this process. Every inner op is folded into its parent, so finding an op's
nearest op above walks the whole chain: the ops table must stay near-linear in the depth
(pointer doubling: log2(depth) passes), where a walk of one level per pass was quadratic
(100,000 deep: 52 s).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def _trace(folder: Path, depth: int) -> Path:
    events = [{"ph": "X", "cat": "cpu_op", "name": "aten::rec", "pid": 1, "tid": 1,
               "ts": i, "dur": 2 * depth - 2 * i} for i in range(depth)]
    path = folder / f"depth{depth}.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depths", default="10000,20000,40000,100000")
    args = parser.parse_args()
    os.environ["AUTOPROF_CACHE"] = "0"
    import autoprof

    print(f"{'depth':>8} {'load s':>8} {'ops s':>8} {'summary s':>10}")
    with tempfile.TemporaryDirectory() as folder:
        for depth in (int(d) for d in args.depths.split(",")):
            path = _trace(Path(folder), depth)
            started = time.perf_counter()
            run = autoprof.load(path)
            loaded = time.perf_counter()
            run.ops()
            tabled = time.perf_counter()
            run.summary()
            done = time.perf_counter()
            print(f"{depth:>8} {loaded - started:>8.2f} {tabled - loaded:>8.2f} "
                  f"{done - tabled:>10.2f}")


if __name__ == "__main__":
    main()
