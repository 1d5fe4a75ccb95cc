"""Realistic GPU traces for the first-open benchmarks: committed H200 runs tiled in time.

Each run's trace is repeated back to back ``--times`` times (``many_ranks.tiled_events``:
each copy shifted by the source's span, its ``ProfilerStep#N`` renumbered after the previous
copy's, correlation, External id and flow ids offset so launches still pair with their
kernels; metadata events once). The run folder gets the source's manifest with
``steps_recorded`` multiplied and ``files`` naming the one plain-JSON trace, so the loader
reads it as the recorded run, ``times`` times longer. Ranks keep their own traces and
manifests (``ddp_step``: two ranks, each tiled).

    .venv/bin/python benchmarks/gpu_tiled.py OUT_DIR --times 10 [--source eager_100 ...]

Prints the folder of each tiled run (written once per source and factor, then reused).
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

from many_ranks import tiled_events

REPO = Path(__file__).resolve().parent.parent
SOURCES = {
    "eager_100": REPO / "traces" / "examples" / "eager_100",
    "graph_replay": REPO / "traces" / "examples" / "graph_replay",
    "ddp_step": REPO / "traces" / "examples" / "ddp_step",
    "gpt2_large": REPO / "tests" / "data" / "gpu_h200_truth" / "runs" / "gpt2_large",
}


def _run_folder(root: Path) -> Path:
    """The (first) run folder under ``root``: the folder holding a manifest.json."""
    return sorted(p.parent for p in root.glob("**/manifest.json"))[0]


def _read(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        trace: dict[str, Any] = json.load(f)
    return trace


def _tile_trace(path: Path, out: Path, times: int) -> str:
    trace = _read(path)
    body = [e for e in trace["traceEvents"] if not (e.get("ph") == "M" or e.get("cat") == "Trace")]
    once = len(trace["traceEvents"]) - len(body)
    tiled = tiled_events(trace, once + times * len(body))
    name = path.name.removesuffix(".gz")
    head = {k: v for k, v in trace.items() if k != "traceEvents"}
    target = out / name
    tmp = target.with_name(target.name + ".tmp")
    with tmp.open("w") as f:
        f.write(json.dumps(head)[:-1] + ', "traceEvents": [\n')
        f.write(",\n".join(json.dumps(e) for e in tiled))
        f.write("\n]}\n")
    tmp.replace(target)
    return name


def _tile_manifest(path: Path, out: Path, times: int, trace_name: str | None) -> None:
    manifest = json.loads(path.read_text())
    if isinstance(manifest.get("steps_recorded"), int):
        manifest["steps_recorded"] *= times
    if trace_name is not None:
        manifest["files"] = [trace_name]
    (out / path.name).write_text(json.dumps(manifest, indent=2) + "\n")


def write_tiled(source: Path, out: Path, times: int) -> Path:
    """Write ``source``'s run folder tiled ``times`` times into ``out``; return ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    traces = sorted(source.glob("*.pt.trace.json*"))
    names = {}
    for trace in traces:
        names[trace.name.split(".")[0]] = _tile_trace(trace, out, times)
    for manifest in sorted(source.glob("*manifest.json")):
        prefix = manifest.name.split(".")[0]
        own = names.get(prefix) if prefix != "manifest" else None
        single = next(iter(names.values())) if len(names) == 1 else None
        _tile_manifest(manifest, out, times, own or single)
    return out


def ensure_tiled(root: Path, name: str, times: int) -> Path:
    """The run ``name`` tiled ``times`` times under ``root``, written once."""
    source = _run_folder(SOURCES[name])
    folder = root / f"{name}-x{times}" / source.name
    done = folder / ".complete"
    if not done.exists():
        write_tiled(source, folder, times)
        done.write_text("")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--times", type=int, default=10)
    parser.add_argument("--source", action="append", choices=sorted(SOURCES))
    args = parser.parse_args()
    for name in args.source or ["eager_100"]:
        print(ensure_tiled(args.out, name, args.times))


if __name__ == "__main__":
    main()
