"""Synthetic many-rank runs tiled from real NCCL DDP traces recorded on the H200.

Each rank's trace is a real rank trace of ``tests/data/gpu_h200_x2/runs`` (two-rank DDP over
NCCL: the balanced run's two ranks, the straggler run's waiting rank, and once per run the
straggler run's slow rank, placed at rank ``world // 3``), its events repeated back to back
until the trace holds about ``events`` events: each copy is shifted by the source's span, its
``ProfilerStep#N`` renumbered after the previous copy's, its correlation, External id and flow
ids offset so that launches still pair with their kernels. Metadata events and the profiler's
``Trace`` span appear once (the span stretched over every copy). ``distributedInfo`` names the
rank and the world size, so the loader reads the rank from the trace.

The tiled body of each source is built and gzipped once per size; each rank's file is a gzip
member holding its own header followed by that shared member (a multi-member gzip file, which
gunzip and every reader of the loader's streamed gunzip read as one stream), so writing 1,024
ranks costs 1,024 small writes, not 1,024 compressions.

    .venv/bin/python benchmarks/many_ranks.py OUT_DIR --ranks 128 --events 20000
"""

from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
RUNS = REPO / "tests" / "data" / "gpu_h200_x2" / "runs"
# (run, rank) of each source trace; the last one is the slow rank the others wait for
SOURCES = (("ddp_balanced", 0), ("ddp_balanced", 1), ("ddp_straggler", 0))
SLOW = ("ddp_straggler", 1)
ID_ARGS = ("correlation", "External id")


def _source(run: str, rank: int) -> dict[str, Any]:
    path = next((RUNS / run).glob(f"*/rank{rank}.*.pt.trace.json.gz"))
    with gzip.open(path, "rt") as f:
        trace: dict[str, Any] = json.load(f)
    return trace


def _max_id(events: list[dict[str, Any]]) -> int:
    top = 0
    for e in events:
        args = e.get("args") or {}
        for key in ID_ARGS:
            value = args.get(key)
            if isinstance(value, int):
                top = max(top, value)
        if isinstance(e.get("id"), int):
            top = max(top, e["id"])
    return top + 1


def _shifted(event: dict[str, Any], copy: int, shift_us: float, id_step: int,
             steps: int) -> dict[str, Any]:
    e = dict(event)
    if "ts" in e:
        e["ts"] = round(e["ts"] + copy * shift_us, 3)
    if isinstance(e.get("id"), int):
        e["id"] = e["id"] + copy * id_step
    name = str(e.get("name", ""))
    if name.startswith("ProfilerStep#"):
        e["name"] = f"ProfilerStep#{int(name.split('#')[1]) + copy * steps}"
    args = e.get("args")
    if args and any(isinstance(args.get(k), int) for k in ID_ARGS):
        e["args"] = {k: (v + copy * id_step if k in ID_ARGS and isinstance(v, int) else v)
                     for k, v in args.items()}
    return e


def tiled_events(trace: dict[str, Any], events: int) -> list[dict[str, Any]]:
    """The source's events repeated until there are about ``events`` of them (module doc)."""
    source = trace["traceEvents"]
    once = [e for e in source if e.get("ph") == "M" or e.get("cat") == "Trace"]
    body = [e for e in source if not (e.get("ph") == "M" or e.get("cat") == "Trace")]
    times = [e["ts"] for e in body if "ts" in e]
    ends = [e["ts"] + e.get("dur", 0) for e in body if "ts" in e]
    shift_us = max(ends) - min(times) + 50.0
    steps = sum(1 for e in body if str(e.get("name", "")).startswith("ProfilerStep#"))
    copies = max(1, round((events - len(once)) / max(len(body), 1)))
    id_step = _max_id(body)
    out = [dict(e) for e in once]
    for e in out:
        if e.get("cat") == "Trace":
            e["dur"] = e.get("dur", 0) + (copies - 1) * shift_us
    for copy in range(copies):
        out.extend(_shifted(e, copy, shift_us, id_step, steps) for e in body)
    return out


def _member(text: str) -> bytes:
    return gzip.compress(text.encode(), compresslevel=6, mtime=0)


def _bodies(events: int) -> dict[tuple[str, int], tuple[dict[str, Any], bytes]]:
    """Per source: its top-level keys (without events) and its gzipped tiled event list."""
    out = {}
    for run, rank in (*SOURCES, SLOW):
        trace = _source(run, rank)
        tiled = tiled_events(trace, events)
        head = {k: v for k, v in trace.items() if k != "traceEvents"}
        text = ",\n".join(json.dumps(e, separators=(", ", ": ")) for e in tiled)
        out[(run, rank)] = (head, _member(text + "\n]}\n"))
    return out


def source_of(rank: int, world: int) -> tuple[str, int]:
    """Which real trace rank ``rank`` of ``world`` ranks is tiled from."""
    if world > 1 and rank == world // 3:
        return SLOW
    return SOURCES[rank % len(SOURCES)]


def write_run(out: Path, world: int, events: int) -> list[Path]:
    """Write ``world`` rank traces of about ``events`` events each into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    bodies = _bodies(events)
    paths = []
    for rank in range(world):
        head, body = bodies[source_of(rank, world)]
        head = dict(head)
        info = dict(head.get("distributedInfo") or {})
        info.update(rank=rank, world_size=world)
        head["distributedInfo"] = info
        prefix = json.dumps(head)[:-1] + ', "traceEvents": [\n'
        path = out / f"rank{rank}.pt.trace.json.gz"
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(_member(prefix) + body)
        tmp.replace(path)
        paths.append(path)
    return paths


def ensure_run(root: Path, world: int, events: int) -> Path:
    """The folder of ``world`` ranks x ``events`` events under ``root``, written once."""
    folder = root / f"ranks{world}-e{events}"
    done = folder / ".complete"
    if not done.exists():
        write_run(folder, world, events)
        done.write_text("")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--events", type=int, default=20_000)
    args = parser.parse_args()
    print(ensure_run(args.out, args.ranks, args.events))


if __name__ == "__main__":
    main()
