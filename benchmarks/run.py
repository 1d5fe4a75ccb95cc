"""autoprof's performance targets, each measured against its baseline in fresh processes.

    .venv/bin/python benchmarks/run.py [--quick] [--out benchmarks/results.json]

Prints one table (target, ours, baseline, ratio = ours / baseline, limit, pass/fail) and
writes every number (median, min, max, each run, peak RSS) as JSON. Targets (docs/performance.md):

1. not recording: a decorated call after its schedule ended vs a plain ``functools.wraps``
   wrapper; ``AUTOPROF=0``: the function itself; ``autoprof.region()`` with no profiler
   running vs ``torch.profiler.record_function``.
2. recording: steps/s over the active steps of a 64x64 matmul+add loop, @autoprof vs the
   same loop written by hand with torch.profiler and the same options.
3. export: time the program is blocked at the end of a run (all artifacts) vs a hand-written
   ``on_trace_ready`` that calls ``export_chrome_trace``, at 10k and 100k events.
4. load and analyze: ``autoprof.load(path).summary()`` vs HTA's ``TraceAnalysis(trace_dir)``
   at 100k and 1M events (time and peak RSS), and a second open (cached columnar form).
5. off the program's path: the plain loop's per-call time in 100 ms buckets for 3 s after a
   profiled window over its time before (worst bucket <= 1.2x), the RSS a finished run leaves
   in the program (<= 10 MB above the hand-written loop's), and the time blocked at the end
   of the window (<= 1.1x a hand-written ``prof.stop()`` + ``export_chrome_trace``).

``--quick`` (under a minute): fewer repeats, 10k events only, HTA only if its venv exists.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))

from _trees import compile_tree  # noqa: E402

from _measure import MeasureError, MeasureTimeout, Sample, Stats, run_child  # noqa: E402
from _report import Row, machine_info, print_table  # noqa: E402
from traces import ensure_trace  # noqa: E402

HTA_PYTHON = _HERE / ".venv-hta" / "bin" / "python"
WORKERS = str(_HERE / "_workers.py")
EVENTS_PER_STEP = 8  # events one profiled matmul+add step adds to a CPU trace (measured)


class Plan:
    """How much work each target gets in one mode."""

    def __init__(self, quick: bool) -> None:
        self.quick = quick
        self.call_repeats = 1 if quick else 5
        self.call_loop_s = 0.02 if quick else 0.2
        self.rec_repeats = 1 if quick else 15  # single processes spread +-40% here
        self.rec_active = 300 if quick else 3000
        self.export_sizes = [10_000] if quick else [10_000, 100_000]
        self.export_repeats = 1 if quick else 3
        self.load_sizes = [10_000] if quick else [100_000, 1_000_000]
        self.load_repeats = 1 if quick else 5
        self.hta_timeout_s = 900.0
        self.load_steps: int | None = 5  # profiler steps per trace (None: the generator's)
        self.device = "cpu"  # where target 2's loop runs ("cuda": on a GPU, CPU+CUDA traced)


def _py(task: str, kwargs: dict[str, Any], python: str = sys.executable) -> list[str]:
    return [python, WORKERS, task, json.dumps(kwargs)]


class TimedOut(str):
    """Why a measurement has no number (it ran past its limit), keeping the lower bounds:
    its time was at least ``timeout_s`` and its peak RSS at least ``peak_rss_mb``."""

    timeout_s: float
    peak_rss_mb: float

    @classmethod
    def of(cls, exc: MeasureTimeout) -> TimedOut:
        text = cls(f"timed out after {exc.timeout_s:.0f} s "
                   f"(peak RSS so far {exc.peak_rss_mb:.0f} MB)")
        text.timeout_s, text.peak_rss_mb = exc.timeout_s, exc.peak_rss_mb
        return text


def _measure(task: str, kwargs: dict[str, Any], env: dict[str, str] | None = None,
             python: str = sys.executable, timeout_s: float = 600.0) -> Sample | str:
    """One fresh-process measurement; a string says why there is no number."""
    try:
        sample = run_child(_py(task, kwargs, python), env=env, cwd=str(_HERE.parent),
                           timeout_s=timeout_s)
    except MeasureTimeout as exc:
        print(f"  ! {task}: {exc}", file=sys.stderr)
        return TimedOut.of(exc)
    except MeasureError as exc:
        print(f"  ! {task}: {str(exc).splitlines()[0]}", file=sys.stderr)
        return f"failed: {str(exc).splitlines()[-1][:200]}"
    if "unavailable" in sample.values:
        return f"not available: {sample.values['unavailable']}"
    return sample


def _pairs(ours: tuple[str, dict[str, Any], dict[str, str] | None],
           base: tuple[str, dict[str, Any], dict[str, str] | None],
           repeats: int, base_python: str = sys.executable
           ) -> tuple[list[Sample | str], list[Sample | str]]:
    """Run ours and the baseline ``repeats`` times each, interleaved (ABBA order)."""
    a: list[Sample | str] = []
    b: list[Sample | str] = []
    for i in range(repeats):
        order = [0, 1] if i % 2 == 0 else [1, 0]
        for which in order:
            if which == 0:
                a.append(_measure(ours[0], ours[1], ours[2]))
            else:
                b.append(_measure(base[0], base[1], base[2], python=base_python))
    return a, b


def _values(samples: list[Sample | str], key: str) -> tuple[Stats | None, str | None]:
    nums = [s.values[key] for s in samples if isinstance(s, Sample)]
    whys = [s for s in samples if isinstance(s, str)]
    if not nums:
        return None, (whys[0] if whys else "not measured")
    return Stats.of(nums), None


def _rss(samples: list[Sample | str]) -> Stats | None:
    nums = [s.peak_rss_mb for s in samples if isinstance(s, Sample)]
    return Stats.of(nums) if nums else None


def target_calls(plan: Plan, raw: dict[str, Any]) -> list[Row]:
    kw = {"loop_s": plan.call_loop_s, "repeat": 3 if plan.quick else 7}
    off = {"AUTOPROF": "0"}
    done, wraps = _pairs(("call_autoprof_done", kw, None), ("call_wraps", kw, None),
                         plan.call_repeats)
    disabled, bare = _pairs(("call_disabled", kw, off), ("call_bare", kw, None),
                            plan.call_repeats)
    region, recfn = _pairs(("region_autoprof", kw, None), ("region_record_function", kw, None),
                           plan.call_repeats)
    raw["calls"] = {k: [s.__dict__ if isinstance(s, Sample) else s for s in v] for k, v in
                    dict(autoprof_done=done, wraps=wraps, disabled=disabled, bare=bare,
                         region=region, record_function=recfn).items()}
    rows = [Row.compare("1 not recording: decorated call, ns", _values(done, "ns_per_call"),
                      _values(wraps, "ns_per_call"), limit=1.2, unit="ns")]
    identity = [s.values.get("identity") for s in disabled if isinstance(s, Sample)]
    row = Row.compare("1 AUTOPROF=0: call, ns (vs bare call)", _values(disabled, "ns_per_call"),
                    _values(bare, "ns_per_call"), limit=None, unit="ns")
    if identity:
        row.limit_text = "is the original"
        row.passed = all(identity)
        row.note = f"decorator returned the original function: {all(identity)}"
    rows.append(row)
    rows.append(Row.bounded("1 region(), no profiler, ns", _values(region, "ns_per_call"),
                             _values(recfn, "ns_per_call"), max_ours=500.0, unit="ns"))
    return rows


def target_recording(plan: Plan, raw: dict[str, Any]) -> list[Row]:
    common = {"active": plan.rec_active, "warmup_calls": 50, "device": plan.device}
    ours, base = _pairs(("recording", {"kind": "autoprof", **common}, None),
                        ("recording", {"kind": "torch", **common}, None), plan.rec_repeats)
    raw["recording"] = {"autoprof": [_plain(s) for s in ours],
                        "torch": [_plain(s) for s in base]}
    on = "" if plan.device == "cpu" else f", {plan.device}"
    row = Row.compare(f"2 recording: steps/s, {plan.rec_active} active steps{on}",
                      _values(ours, "steps_per_s"), _values(base, "steps_per_s"),
                      limit=0.95, unit="/s", higher_is_better=True)
    parts = []
    for key in ("step_us_p10", "step_us_p50"):
        o, _ = _values(ours, key)
        b, _ = _values(base, key)
        if o and b:
            parts.append(f"median per-step {key[-3:]} {o.median:.1f} vs {b.median:.1f} us")
    row.note = "; ".join(parts + ([row.note] if row.note else []))
    return [row]


def target_export(plan: Plan, raw: dict[str, Any], out_root: Path) -> list[Row]:
    from _workers import count_trace_events

    rows = []
    for n in plan.export_sizes:
        active = max(2, n // EVENTS_PER_STEP)
        samples: dict[str, list[Sample | str]] = {"autoprof": [], "torch": []}
        events: dict[str, list[int]] = {"autoprof": [], "torch": []}
        for i in range(plan.export_repeats):
            for kind in (("autoprof", "torch") if i % 2 == 0 else ("torch", "autoprof")):
                out = out_root / "export" / f"n{n}-{kind}-{i}"
                _clean(out)
                out.mkdir(parents=True)
                s = _measure("export", {"kind": kind, "active": active, "warmup_calls": 50,
                                        "trailing": 5, "out": str(out)})
                if isinstance(s, Sample):
                    s.values["exit_tail_s"] = max(0.0, s.end_unix - s.values["done_unix"])
                    events[kind].append(count_trace_events(str(out)))
                samples[kind].append(s)
                _clean(out)
        raw[f"export_{n}"] = {k: [_plain(s) for s in v] for k, v in samples.items()}
        raw[f"export_{n}"]["events"] = events
        row = Row.compare(f"3 export: blocked at end, s, ~{n // 1000}k events",
                        _values(samples["autoprof"], "blocked_s"),
                        _values(samples["torch"], "blocked_s"), limit=2.0, unit="s")
        alone, _ = _values(samples["torch"], "export_chrome_trace_s")
        vs_alone = Row.compare(f"3 export: blocked at end vs export_chrome_trace alone, s, "
                               f"~{n // 1000}k events", _values(samples["autoprof"], "blocked_s"),
                               (alone, None if alone else "not measured"), limit=2.0, unit="s")
        vs_alone.baseline_name = "export_chrome_trace alone"
        vs_alone.note = ("most of both sides' blocked time is torch's own profiler stop "
                         "(_disable_profiler), see docs/performance.md")
        deferred, _ = _values(samples["autoprof"], "deferred_s")
        got = events["autoprof"] or events["torch"]
        parts = [f"trace events {got[0] if got else '?'}"]
        if alone:
            parts.append(f"export_chrome_trace alone {alone.median:.3f} s")
        if deferred:
            parts.append(f"autoprof work deferred off the user's path {deferred.median:.3f} s")
        row.note = "; ".join(parts + ([row.note] if row.note else []))
        rows += [row, vs_alone]
    return rows


def target_load(plan: Plan, raw: dict[str, Any], out_root: Path) -> list[Row]:
    rows = []
    have_hta = HTA_PYTHON.exists()
    compile_tree(_HERE.parent)  # HTA's venv has its bytecode (pip install); ours too
    for n in plan.load_sizes:
        trace = ensure_trace(out_root / "traces", n, plan.load_steps)
        first: list[Sample | str] = []
        second: list[Sample | str] = []
        hta: list[Sample | str] = []
        for i in range(plan.load_repeats):
            ours_dir = out_root / "load" / f"{trace.parent.name}-ours-{i}"
            _fresh_link(trace, ours_dir)
            path = str(ours_dir / trace.name)
            if have_hta and i % 2 == 1:
                hta.append(_hta(trace, out_root, n, plan.hta_timeout_s))
            first.append(_measure("load_autoprof", {"path": path}))
            second.append(_measure("load_autoprof", {"path": path}))
            if have_hta and i % 2 == 0:
                hta.append(_hta(trace, out_root, n, plan.hta_timeout_s))
            _clean(ours_dir)
        if not have_hta:
            hta = [f"not available: HTA venv missing ({HTA_PYTHON}); run "
                   "benchmarks/setup_hta.sh"]
        raw[f"load_{n}"] = {"first": [_plain(s) for s in first],
                            "second": [_plain(s) for s in second],
                            "hta": [_plain(s) for s in hta]}
        label = (f"{n // 1000}k" if n < 1_000_000 else f"{n // 1_000_000}M") + " events"
        label += f", {plan.load_steps} steps" if plan.load_steps else ", ~700 events/step"
        hta_time, rss_hta = _values(hta, "work_s"), _rss(hta)
        censored = [s for s in hta if isinstance(s, TimedOut)]
        if hta_time[0] is None and censored:  # HTA never finished: keep its lower bounds
            hta_time = (Stats.of([s.timeout_s for s in censored]), None)
            rss_hta = Stats.of([s.peak_rss_mb for s in censored])
        time_row = Row.compare(f"4 load+summary vs HTA, s, {label}",
                               _values(first, "work_s"), hta_time, limit=1 / 8, unit="s")
        rss_first = _rss(first)
        rss_row = Row.compare(f"4 peak RSS vs HTA, MB, {label}",
                              (rss_first, None if rss_first else "not measured"),
                              (rss_hta, None if rss_hta else "not measured"),
                              limit=1 / 3, unit="MB")
        if censored and not any(isinstance(s, Sample) for s in hta):
            why = (f"HTA did not finish in {len(censored)} run(s) of at most "
                   f"{censored[0].timeout_s:.0f} s: its numbers are lower bounds (time limit; "
                   "peak RSS when killed), so this ratio is an upper bound")
            time_row.note = rss_row.note = why
        tree_row = Row.compare(f"4 peak RSS, all processes at once, vs HTA, MB, {label}",
                               _values(first, "tree_peak_rss_mb"),
                               _values(hta, "tree_peak_rss_mb"), limit=1 / 3, unit="MB")
        tree_row.note = ("sampled every 20 ms: the process and its children (the decode "
                         "helper; HTA's parser) together")
        rows += [time_row, rss_row, tree_row, _rss_above_imports_row(first, hta, label)]
        rows.append(Row.compare(f"4 breakdown vs the rest of a first open, s, {label}",
                                _values(first, "breakdown_s"),
                                _values(first, "open_without_breakdown_s"), limit=0.2,
                                unit="s"))
        budget = 0.5 if n >= 1_000_000 else None
        rows.append(Row.bounded(f"4 second open (cached): load, s, {label}",
                                _values(second, "load_s"), _values(first, "load_s"),
                                max_ours=budget, unit="s", baseline_name="first load"))
        rows.append(Row.bounded(f"4 second open (cached): load+summary, s, {label}",
                                _values(second, "work_s"), _values(first, "work_s"),
                                max_ours=budget, unit="s", baseline_name="first open"))
    return rows


def target_offpath(plan: Plan, raw: dict[str, Any], out_root: Path) -> list[Row]:
    """After the window: the plain loop's speed, the RSS left behind, the blocked time."""
    kw = {"active": 1250, "seconds": 3.0, "bucket_s": 0.1}  # ~10k trace events
    samples: dict[str, list[Sample | str]] = {"autoprof": [], "torch": []}
    for i in range(plan.export_repeats):
        for kind in (("autoprof", "torch") if i % 2 == 0 else ("torch", "autoprof")):
            out = out_root / "offpath" / f"{kind}-{i}"
            _clean(out)
            out.mkdir(parents=True)
            samples[kind].append(_measure("after_window", {**kw, "kind": kind, "out": str(out)}))
            _clean(out)
    raw["offpath"] = {k: [_plain(s) for s in v] for k, v in samples.items()}
    cores = os.cpu_count()
    slow = Row.bounded(f"5 off path: worst 100 ms bucket in 3 s after the window / before, "
                       f"x ({cores} cores)", _values(samples["autoprof"], "worst_bucket_ratio"),
                       _values(samples["torch"], "worst_bucket_ratio"), 1.2, "x",
                       baseline_name="hand-written torch.profiler")
    ours_rss, why = _values(samples["autoprof"], "rss_added_mb")
    base_rss, why_b = _values(samples["torch"], "rss_added_mb")
    rss = Row.bounded("5 off path: RSS added by a finished run, MB (torch's buffers in both)",
                      (ours_rss, why), (base_rss, why_b),
                      base_rss.median + 10.0 if base_rss else None, "MB",
                      baseline_name="hand-written torch.profiler")
    imports = {tuple(s.values["imports"]) for s in samples["autoprof"] if isinstance(s, Sample)}
    rss.note = f"modules imported by recording among pandas/pyarrow/msgspec: {sorted(imports)}"
    blocked = Row.compare("5 off path: blocked at the end of the window, s, ~10k events",
                          *_blocked(plan, out_root), limit=1.1, unit="s")
    blocked.baseline_name = "hand-written prof.stop() + export_chrome_trace"
    return [slow, rss, blocked]


def _blocked(plan: Plan, out_root: Path) -> tuple[Any, Any]:
    samples: dict[str, list[Sample | str]] = {"autoprof": [], "torch": []}
    for i in range(plan.export_repeats):
        for kind in (("autoprof", "torch") if i % 2 == 0 else ("torch", "autoprof")):
            out = out_root / "offpath" / f"blocked-{kind}-{i}"
            _clean(out)
            out.mkdir(parents=True)
            samples[kind].append(_measure("export", {"kind": kind, "active": 1250,
                                                     "warmup_calls": 50, "trailing": 5,
                                                     "out": str(out)}))
            _clean(out)
    return _values(samples["autoprof"], "blocked_s"), _values(samples["torch"], "blocked_s")


def _rss_above_imports_row(ours: list[Sample | str], hta: list[Sample | str], label: str
                           ) -> Row:
    """Peak RSS minus the RSS right after imports (numpy, pandas and the contender's own
    modules): the memory the load itself takes. Both processes import pandas (and with it
    pyarrow), ~100 MB here, which a whole-process ratio cannot go below."""
    def above(samples: list[Sample | str]) -> tuple[Stats | None, str | None]:
        nums = [s.peak_rss_mb - s.values["base_rss_mb"] for s in samples
                if isinstance(s, Sample) and "base_rss_mb" in s.values]
        return (Stats.of(nums), None) if nums else (None, "not measured")

    return Row.compare(f"4 peak RSS above imports vs HTA, MB, {label}", above(ours), above(hta),
                       limit=1 / 3, unit="MB")


def _hta(trace: Path, out_root: Path, n: int, timeout_s: float) -> Sample | str:
    hta_dir = out_root / "load" / f"{trace.parent.name}-hta"
    if not (hta_dir / trace.name).exists():
        _fresh_link(trace, hta_dir)
    return _measure("load_hta", {"trace_dir": str(hta_dir)}, python=str(HTA_PYTHON),
                    timeout_s=timeout_s)


def _fresh_link(trace: Path, folder: Path) -> None:
    """A folder holding only ``trace`` (hard link: no copy, no cache beside it yet)."""
    _clean(folder)
    folder.mkdir(parents=True)
    try:
        os.link(trace, folder / trace.name)
    except OSError:
        import shutil

        shutil.copyfile(trace, folder / trace.name)


def _clean(folder: Path) -> None:
    import shutil

    if folder.exists():
        shutil.rmtree(folder)


def _plain(s: Sample | str) -> Any:
    return s.__dict__ if isinstance(s, Sample) else s


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="autoprof benchmarks (docs/performance.md)")
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--out", type=Path, default=_HERE / "results.json")
    parser.add_argument("--only", default="1,2,3,4,5", help="targets to run, e.g. 1,4")
    parser.add_argument("--work", type=Path, default=_HERE / "out",
                        help="folder for generated traces and run outputs (git-ignored)")
    parser.add_argument("--load-steps", type=int, default=5,
                        help="ProfilerStep spans per trace for target 4 (0: the generator's "
                             "own, about one per 700 events)")
    parser.add_argument("--load-sizes", default=None,
                        help="comma-separated event counts for target 4 (default by mode)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where target 2's matmul+add loop runs (cuda: bf16 on a GPU)")
    parser.add_argument("--rec-repeats", type=int, default=None,
                        help="fresh-process pairs for target 2 (default by mode)")
    args = parser.parse_args(argv)
    plan = Plan(args.quick)
    plan.device = args.device
    plan.rec_repeats = args.rec_repeats or plan.rec_repeats
    plan.load_steps = args.load_steps or None
    if args.load_sizes:
        plan.load_sizes = [int(x) for x in args.load_sizes.split(",")]
    out_root = args.work.resolve()
    only = {int(t) for t in args.only.split(",")}
    started = time.time()
    machine = machine_info(HTA_PYTHON)
    raw: dict[str, Any] = {}
    rows: list[Row] = []
    steps = [(1, "not recording", lambda: target_calls(plan, raw)),
             (2, "recording", lambda: target_recording(plan, raw)),
             (3, "export", lambda: target_export(plan, raw, out_root)),
             (4, "load and analyze", lambda: target_load(plan, raw, out_root)),
             (5, "off the program's path", lambda: target_offpath(plan, raw, out_root))]
    for number, title, fn in steps:
        if number in only:
            t0 = time.perf_counter()
            print(f"[{number}] {title} ...", file=sys.stderr, flush=True)
            rows.extend(fn())
            print(f"    {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
            _write(args.out, args.quick, started, machine, rows, raw, partial=True)
    machine["loadavg_end"] = os.getloadavg()
    print_table(rows)
    _write(args.out, args.quick, started, machine, rows, raw, partial=False)
    print(f"wrote {args.out}")
    return 0


def _write(out: Path, quick: bool, started: float, machine: dict[str, Any], rows: list[Row],
           raw: dict[str, Any], partial: bool) -> None:
    """Write the results JSON (after each target too, so a cut-off run keeps its numbers)."""
    result = {"mode": "quick" if quick else "full", "partial": partial, "argv": sys.argv,
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
              "duration_s": time.time() - started, "machine": machine,
              "rows": [r.as_dict() for r in rows], "raw": raw}
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=1, default=str))
    tmp.replace(out)


if __name__ == "__main__":
    raise SystemExit(main())
