"""Could another JSON engine build the events' columns faster than the loader's msgspec path?

The same bytes (the first ``--mib`` MiB of the 1M-event, 5-step synthetic trace's events,
cut at an event boundary) decoded into columns by each engine installed, in one process,
the engines alternating, ``--rounds`` times; cells are the median wall and CPU time
(``process_time``: all of the process's threads), and CPU per MiB:

- ``autoprof``: the loader's own path, ``chunk_decode.decode_chunk`` on 1 MiB chunks
  (msgspec's typed decode, then the columns: what one process of a first open does);
- ``msgspec typed``: msgspec's typed decode of those chunks alone (no columns);
- ``msgspec scan``: msgspec decoding each chunk as a list of ``Raw`` (JSON's parse, no
  objects but one per event);
- ``pyarrow.json``: the events as newline-delimited JSON (``},{`` made ``}\\n{``, not timed),
  read with an explicit schema of the fields the loader keeps, Arrow's threads on;
- ``polars``: the same bytes through ``polars.read_ndjson`` with that schema (input dims,
  types and values as text), when polars is installed.

    .venv/bin/python benchmarks/columnar_decoders.py [--mib 100] [--rounds 5] [--out F.json]
    PYTHONPATH=/tmp/polars-site .venv/bin/python benchmarks/columnar_decoders.py  # + polars
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import msgspec  # noqa: E402

from autoprof.analysis.loader import schema  # noqa: E402
from autoprof.analysis.loader.chunk_decode import CHUNK_BYTES, decode_chunk  # noqa: E402
from autoprof.analysis.loader.columns import ColumnBuilder  # noqa: E402

from traces import ensure_trace  # noqa: E402

BOUNDARY = b'},{"ph"'  # between two events of the synthetic trace (compact JSON)


def _events(trace: Path, mib: int) -> bytes:
    """The trace's events from the first to the last whole one within ``mib`` MiB."""
    with trace.open("rb") as f:
        data = f.read(mib * 1024**2 + 4096)
    start = data.index(b'[{"ph"') + 1
    end = data.rindex(BOUNDARY, start, mib * 1024**2) + 1
    return data[start:end]


def _chunks(body: bytes) -> list[bytes]:
    out, at = [], 0
    while at < len(body):
        cut = body.find(BOUNDARY, at + CHUNK_BYTES)
        end = len(body) if cut == -1 else cut + 1
        out.append(b"[" + body[at:end] + b"]")
        at = end + 1
    return out


def _engines(body: bytes) -> dict[str, Callable[[], int]]:
    chunks = _chunks(body)
    raw_list = msgspec.json.Decoder(list[msgspec.Raw])

    def ours() -> int:
        builder = ColumnBuilder()
        for chunk in chunks:
            builder.append(decode_chunk(chunk, builder))
        return len(builder.finish())

    engines: dict[str, Callable[[], int]] = {
        "autoprof": ours,
        "msgspec typed": lambda: sum(len(schema.EVENTS_DECODER.decode(c)) for c in chunks),
        "msgspec scan": lambda: sum(len(raw_list.decode(c)) for c in chunks),
    }
    lines = body.replace(BOUNDARY, b'}\n{"ph"')
    try:
        import pyarrow as pa
        import pyarrow.json as pj
    except ImportError:
        pass
    else:
        args = pa.struct([
            ("External id", pa.int64()), ("correlation", pa.int64()), ("flops", pa.float64()),
            ("bytes", pa.float64()), ("Input Dims", pa.list_(pa.list_(pa.int64()))),
            ("Input type", pa.list_(pa.string())), ("Concrete Inputs", pa.list_(pa.string())),
            ("device", pa.int64()), ("stream", pa.int64())])
        fields = pa.schema([
            ("ph", pa.string()), ("cat", pa.string()), ("name", pa.string()),
            ("pid", pa.int64()), ("tid", pa.int64()), ("ts", pa.float64()),
            ("dur", pa.float64()), ("id", pa.int64()), ("args", args)])
        options = pj.ParseOptions(explicit_schema=fields, unexpected_field_behavior="ignore")

        def arrow() -> int:
            table = pj.read_json(io.BytesIO(lines), parse_options=options,
                                 read_options=pj.ReadOptions(block_size=4 * 1024**2))
            return int(table.num_rows)

        engines["pyarrow.json"] = arrow
    try:
        import polars as pl
    except ImportError:
        pass
    else:
        text = pl.String
        polars_schema = {
            "ph": text, "cat": text, "name": text, "pid": pl.Int64, "tid": pl.Int64,
            "ts": pl.Float64, "dur": pl.Float64, "id": pl.Int64,
            "args": pl.Struct({"External id": pl.Int64, "correlation": pl.Int64,
                               "flops": pl.Float64, "bytes": pl.Float64, "Input Dims": text,
                               "Input type": text, "Concrete Inputs": text,
                               "device": pl.Int64, "stream": pl.Int64})}
        engines["polars"] = lambda: pl.read_ndjson(io.BytesIO(lines),
                                                   schema=polars_schema).height
    return engines


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("msgspec", "pyarrow", "polars", "numpy"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            pass
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    body = _events(ensure_trace(args.work / "traces", 1_000_000, 5), args.mib)
    mib = len(body) / 1024**2
    engines = _engines(body)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in engines}
    rows: dict[str, int] = {}
    for i in range(args.rounds):
        for name in engines if i % 2 == 0 else reversed(list(engines)):
            wall, cpu = time.perf_counter(), time.process_time()
            rows[name] = engines[name]()
            samples[name].append((time.perf_counter() - wall, time.process_time() - cpu))
    print(f"{mib:.1f} MiB of events, {args.rounds} rounds, {os.cpu_count()} CPUs")
    print("| engine | events | wall, s | CPU, s | CPU per MiB, ms |")
    print("| --- | --- | --- | --- | --- |")
    report: dict[str, Any] = {"mib": mib, "rounds": args.rounds, "cpus": os.cpu_count(),
                              "python": platform.python_version(), "versions": _versions(),
                              "engines": {}}
    for name, runs in samples.items():
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"| {name} | {rows[name]:,} | {wall:.3f} | {cpu:.3f} | {1000 * cpu / mib:.2f} |")
        report["engines"][name] = {"events": rows[name], "wall_s": [w for w, _ in runs],
                                   "cpu_s": [c for _, c in runs]}
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
