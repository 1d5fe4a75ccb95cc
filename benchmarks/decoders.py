"""Evidence for the loader's JSON decoder and cache format, measured in fresh processes.

Decoders (one trace file -> the columns the events table needs, as a pandas DataFrame of the
complete ``X`` events): ``json``, ``orjson``, ``msgspec`` untyped, and ``msgspec`` typed
(``Struct`` types that name only the needed fields, so the rest is skipped, not built).
Each is timed in two stages (decode; build columns) with the process's peak RSS.

Cache formats (the events table written beside the trace and read back): Arrow IPC (feather
v2: uncompressed, lz4, zstd; strings as dictionaries, and uncompressed with plain strings as
``arrow_ipc_str``), parquet (snappy) and ``.npz`` (numpy arrays, strings as
dictionary codes, read with ``allow_pickle=False``): write time, read time (fresh process,
into a pandas DataFrame), size on disk.

    .venv/bin/python benchmarks/decoders.py [--sizes 100000,1000000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import msgspec

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _measure import MeasureError, Stats, emit, run_child  # noqa: E402
from traces import ensure_trace  # noqa: E402

DECODERS = ("json", "orjson", "msgspec", "msgspec_typed")
CACHES = ("arrow_ipc", "arrow_ipc_str", "arrow_ipc_lz4", "arrow_ipc_zstd", "parquet_snappy",
          "npz")
_STR_COLUMNS = ("name", "cat", "lane", "input_dims")


# ---------------------------------------------------------------------------- decoders --
class Args(msgspec.Struct, gc=False):
    """The few ``args`` fields the events table needs; every other key is skipped."""

    external_id: int = msgspec.field(name="External id", default=-1)
    correlation: int = -1
    flops: float | None = None
    input_dims: msgspec.Raw = msgspec.field(name="Input Dims", default=msgspec.Raw(b""))
    device: int = -1
    stream: int = -1


class Event(msgspec.Struct, gc=False):
    ph: str = ""
    cat: str = ""
    name: str = ""
    pid: int | str = 0
    tid: int | str = 0
    ts: float = 0.0
    dur: float = 0.0
    args: Args | None = None


class Trace(msgspec.Struct, gc=False):
    traceEvents: list[Event]  # noqa: N815 - Kineto's key


def _typed_decoder() -> Any:
    return msgspec.json.Decoder(Trace)


def _columns_from_dicts(events: list[dict[str, Any]]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "name", "cat", "pid", "tid", "ts_us", "dur_us", "external_id", "correlation",
        "flops", "input_dims")}
    for e in events:
        if e.get("ph") != "X":
            continue
        a = e.get("args") or {}
        cols["name"].append(e.get("name", ""))
        cols["cat"].append(e.get("cat", ""))
        cols["pid"].append(e.get("pid", 0))
        cols["tid"].append(e.get("tid", 0))
        cols["ts_us"].append(e.get("ts", 0.0))
        cols["dur_us"].append(e.get("dur", 0.0))
        cols["external_id"].append(a.get("External id", -1))
        cols["correlation"].append(a.get("correlation", -1))
        cols["flops"].append(a.get("flops"))
        dims = a.get("Input Dims")
        cols["input_dims"].append("" if dims is None else json.dumps(dims))
    return cols


def _columns_from_structs(events: list[Any]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {k: [] for k in (
        "name", "cat", "pid", "tid", "ts_us", "dur_us", "external_id", "correlation",
        "flops", "input_dims")}
    for e in events:
        if e.ph != "X":
            continue
        a = e.args
        cols["name"].append(e.name)
        cols["cat"].append(e.cat)
        cols["pid"].append(e.pid)
        cols["tid"].append(e.tid)
        cols["ts_us"].append(e.ts)
        cols["dur_us"].append(e.dur)
        if a is None:
            cols["external_id"].append(-1)
            cols["correlation"].append(-1)
            cols["flops"].append(None)
            cols["input_dims"].append("")
        else:
            cols["external_id"].append(a.external_id)
            cols["correlation"].append(a.correlation)
            cols["flops"].append(a.flops)
            raw = bytes(a.input_dims)
            cols["input_dims"].append(raw.decode() if raw else "")
    return cols


def decode_once(decoder: str, path: str) -> dict[str, Any]:
    """Child: decode ``path`` with ``decoder``, build the columns; return the stage times."""
    import pandas as pd

    if decoder == "orjson":
        import orjson
    typed = _typed_decoder() if decoder == "msgspec_typed" else None
    t0 = time.perf_counter()
    data = Path(path).read_bytes()
    t1 = time.perf_counter()
    if decoder == "json":
        events = json.loads(data)["traceEvents"]
    elif decoder == "orjson":
        events = orjson.loads(data)["traceEvents"]
    elif decoder == "msgspec":
        events = msgspec.json.decode(data)["traceEvents"]
    elif typed is not None:
        events = typed.decode(data).traceEvents
    else:
        raise ValueError(f"unknown decoder {decoder!r}")
    t2 = time.perf_counter()
    del data
    cols = _columns_from_structs(events) if typed else _columns_from_dicts(events)
    frame = pd.DataFrame(cols)
    t3 = time.perf_counter()
    return {"read_s": t1 - t0, "decode_s": t2 - t1, "columns_s": t3 - t2,
            "total_s": t3 - t0, "rows": len(frame), "events": len(events)}


# ------------------------------------------------------------------------------ caches --
def _events_frame(path: str) -> Any:
    """A frame shaped like the contract's events table (all its columns and dtypes)."""
    import numpy as np
    import pandas as pd

    cols = _columns_from_structs(_typed_decoder().decode(Path(path).read_bytes()).traceEvents)
    frame = pd.DataFrame(cols)
    n = len(frame)
    gpu = frame["cat"].isin(["kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"])
    frame["lane"] = np.where(gpu, "gpu", "cpu")
    frame["is_gpu_work"] = frame["cat"].isin(["kernel", "gpu_memcpy", "gpu_memset"])
    frame["pid"] = pd.to_numeric(frame["pid"], errors="coerce").fillna(-1).astype("int64")
    frame["tid"] = pd.to_numeric(frame["tid"], errors="coerce").fillna(-1).astype("int64")
    frame["device"] = np.where(gpu, 0, -1).astype("int64")
    frame["stream"] = np.where(gpu, 7, -1).astype("int64")
    frame["end_us"] = frame["ts_us"] + frame["dur_us"]
    frame["self_us"] = frame["dur_us"] * 0.5
    frame["depth"] = np.arange(n, dtype="int64") % 5
    frame["parent"] = np.arange(n, dtype="int64") - 1
    frame["step"] = np.arange(n, dtype="int64") // 800
    frame["launch_row"] = np.where(gpu, np.arange(n) - 2, -1).astype("int64")
    frame["op_row"] = np.where(gpu, np.arange(n) - 4, -1).astype("int64")
    frame["flops"] = frame["flops"].astype("float64")
    frame["rank"] = np.zeros(n, dtype="int64")
    for col in _STR_COLUMNS:
        frame[col] = frame[col].astype("category")
    return frame.sort_values("ts_us", kind="stable").reset_index(drop=True)


def _cache_path(out_dir: Path, fmt: str) -> Path:
    suffix = {"parquet_snappy": ".parquet", "npz": ".npz"}.get(fmt, ".arrow")
    return out_dir / f"events.{fmt}{suffix}"


def _write_cache(frame: Any, fmt: str, path: Path) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.feather as feather
    import pyarrow.parquet as pq

    if fmt.startswith("arrow_ipc"):
        codec = {"arrow_ipc": "uncompressed", "arrow_ipc_str": "uncompressed",
                 "arrow_ipc_lz4": "lz4", "arrow_ipc_zstd": "zstd"}[fmt]
        feather.write_feather(frame, str(path), compression=codec)
    elif fmt == "parquet_snappy":
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), str(path))
    else:
        arrays: dict[str, Any] = {}
        for col in frame.columns:
            series = frame[col]
            if col in _STR_COLUMNS:
                arrays[f"{col}__codes"] = series.cat.codes.to_numpy()
                arrays[f"{col}__categories"] = np.asarray(series.cat.categories, dtype=str)
            else:
                arrays[col] = series.to_numpy()
        np.savez(str(path), **arrays)


def _read_cache(fmt: str, path: Path) -> Any:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    if fmt.startswith("arrow_ipc"):
        with pa.memory_map(str(path)) as source:
            return pa.ipc.open_file(source).read_all().to_pandas()
    if fmt == "parquet_snappy":
        return pq.read_table(str(path)).to_pandas()
    with np.load(str(path), allow_pickle=False) as npz:
        cols: dict[str, Any] = {}
        for key in npz.files:
            if key.endswith("__categories"):
                continue
            if key.endswith("__codes"):
                col = key[: -len("__codes")]
                cols[col] = pd.Categorical.from_codes(npz[key], npz[f"{col}__categories"])
            else:
                cols[key] = npz[key]
        return pd.DataFrame(cols)


def cache_write_once(fmt: str, path: str, out_dir: str) -> dict[str, Any]:
    frame = _events_frame(path)
    if fmt == "arrow_ipc_str":  # strings as pandas' default string dtype, not dictionaries
        frame = frame.astype({col: str for col in _STR_COLUMNS})
    target = _cache_path(Path(out_dir), fmt)
    t0 = time.perf_counter()
    _write_cache(frame, fmt, target)
    write_s = time.perf_counter() - t0
    return {"write_s": write_s, "size_mb": target.stat().st_size / 2**20, "rows": len(frame)}


def cache_read_once(fmt: str, out_dir: str) -> dict[str, Any]:
    import numpy  # noqa: F401 - imports are not part of the read time
    import pandas  # noqa: F401
    import pyarrow  # noqa: F401
    import pyarrow.parquet  # noqa: F401

    t0 = time.perf_counter()
    frame = _read_cache(fmt, _cache_path(Path(out_dir), fmt))
    return {"read_s": time.perf_counter() - t0, "rows": len(frame)}


# ------------------------------------------------------------------------------ parent --
def _child(*args: str) -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--child", *args]


def _summarize(samples: list[Any], keys: tuple[str, ...]) -> dict[str, Any]:
    out = {k: Stats.of([s.values[k] for s in samples]).as_dict() for k in keys}
    out["peak_rss_mb"] = Stats.of([s.peak_rss_mb for s in samples]).as_dict()
    return out


def study(sizes: list[int], repeats: int, out_dir: Path, decoders: bool = True,
          formats: tuple[str, ...] = CACHES) -> dict[str, Any]:
    results: dict[str, Any] = {"decoders": {}, "caches": {}}
    for n in sizes if decoders else []:
        path = str(ensure_trace(out_dir / "traces", n))
        size_mb = Path(path).stat().st_size / 2**20
        per: dict[str, list[Any]] = {d: [] for d in DECODERS}
        for _ in range(repeats):  # interleaved: one of each per round
            for dec in DECODERS:
                try:
                    per[dec].append(run_child(_child("decode", dec, path)))
                except MeasureError as exc:
                    print(f"decoder {dec} at {n}: {exc}", file=sys.stderr)
        results["decoders"][str(n)] = {
            "file_mb": size_mb,
            **{d: _summarize(s, ("decode_s", "columns_s", "total_s")) for d, s in per.items()
               if s},
        }
        _print_decoders(n, size_mb, results["decoders"][str(n)])
    n = max(sizes)
    path = str(ensure_trace(out_dir / "traces", n))
    cache_dir = out_dir / "cache_study"
    cache_dir.mkdir(parents=True, exist_ok=True)
    for fmt in formats:
        writes = [run_child(_child("cache_write", fmt, path, str(cache_dir)))
                  for _ in range(max(1, repeats - 1))]
        reads = [run_child(_child("cache_read", fmt, str(cache_dir))) for _ in range(repeats)]
        results["caches"][fmt] = {
            "events": n,
            "rows": writes[0].values["rows"],
            "size_mb": writes[0].values["size_mb"],
            "write_s": Stats.of([w.values["write_s"] for w in writes]).as_dict(),
            "read_s": Stats.of([r.values["read_s"] for r in reads]).as_dict(),
            "read_peak_rss_mb": Stats.of([r.peak_rss_mb for r in reads]).as_dict(),
        }
    _print_caches(results["caches"])
    return results


def _print_decoders(n: int, size_mb: float, res: dict[str, Any]) -> None:
    print(f"\n{n} events ({size_mb:.0f} MB): median [min-max] of fresh processes")
    print(f"{'decoder':<15}{'decode s':>22}{'columns s':>12}{'total s':>10}{'peak MB':>10}")
    for dec in DECODERS:
        if dec not in res:
            print(f"{dec:<15}  failed")
            continue
        d = res[dec]
        dec_s = d["decode_s"]
        print(f"{dec:<15}{dec_s['median']:>8.2f} [{dec_s['min']:.2f}-{dec_s['max']:.2f}]"
              f"{'':>2}{d['columns_s']['median']:>10.2f}{d['total_s']['median']:>10.2f}"
              f"{d['peak_rss_mb']['median']:>10.0f}")


def _print_caches(res: dict[str, Any]) -> None:
    print(f"\ncache formats, events table of {next(iter(res.values()))['rows']} rows")
    print(f"{'format':<16}{'write s':>9}{'read s':>9}{'size MB':>9}{'read peak MB':>14}")
    for fmt, d in res.items():
        print(f"{fmt:<16}{d['write_s']['median']:>9.3f}{d['read_s']['median']:>9.3f}"
              f"{d['size_mb']:>9.1f}{d['read_peak_rss_mb']['median']:>14.0f}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        kind, *rest = argv[1:]
        if kind == "decode":
            emit(decode_once(rest[0], rest[1]))
        elif kind == "cache_write":
            emit(cache_write_once(rest[0], rest[1], rest[2]))
        else:
            emit(cache_read_once(rest[0], rest[1]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results-decoders.json"))
    parser.add_argument("--caches-only", action="store_true", help="skip the decoders")
    parser.add_argument("--formats", default=",".join(CACHES), help="cache formats to study")
    args = parser.parse_args(argv)
    out_dir = Path(__file__).resolve().parent / "out"
    results = study([int(s) for s in args.sizes.split(",")], args.repeats, out_dir,
                    decoders=not args.caches_only, formats=tuple(args.formats.split(",")))
    results["argv"] = sys.argv
    results["date_utc"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
