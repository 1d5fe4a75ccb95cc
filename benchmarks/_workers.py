"""The measurements themselves; each runs in its own fresh process.

    python benchmarks/_workers.py TASK '{"kwarg": value, ...}'

prints one JSON line (see ``_measure.emit``). Only the standard library is imported at the
top, so HTA's separate virtualenv can run the ``load_hta`` task with this same file. A task
whose subject is not there yet (autoprof's decorator, loader or summary not written) reports
``{"unavailable": "<why>"}`` instead of failing.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _measure import TreeRss, emit, proc_status_mb  # noqa: E402

_REPO = Path(__file__).resolve().parent.parent
Task = Callable[..., dict[str, Any]]
TASKS: dict[str, Task] = {}


class Unavailable(Exception):
    """The subject of a measurement does not exist (yet) in this checkout."""


def task(fn: Task) -> Task:
    TASKS[fn.__name__] = fn
    return fn


def _best_ns(stmt: Callable[[], object], loop_s: float, repeat: int) -> float:
    """Best per-call time in ns over ``repeat`` timing loops of about ``loop_s`` each."""
    timer = timeit.Timer(stmt)
    probe = 1000
    per_call_s = timer.timeit(probe) / probe  # also warms the path
    number = max(1000, int(loop_s / max(per_call_s, 1e-9)))
    return min(timer.repeat(repeat=repeat, number=number)) / number * 1e9


def _import_autoprof() -> Any:
    if str(_REPO) not in sys.path:
        sys.path.insert(0, str(_REPO))
    try:
        import autoprof

        return autoprof
    except ImportError as exc:
        raise Unavailable(f"import autoprof failed: {exc}") from exc


def _decorator() -> Any:
    try:
        return _import_autoprof().autoprof
    except (ImportError, AttributeError) as exc:
        raise Unavailable(f"autoprof.autoprof is not available: {exc}") from exc


def _trivial(x: int) -> int:
    return x


# ------------------------------------------------------------ 1. not recording / disabled --
@task
def call_bare(loop_s: float, repeat: int) -> dict[str, Any]:
    f = _trivial
    return {"ns_per_call": _best_ns(lambda: f(1), loop_s, repeat)}


@task
def call_wraps(loop_s: float, repeat: int) -> dict[str, Any]:
    import functools

    def wrapper_of(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    f = wrapper_of(_trivial)
    return {"ns_per_call": _best_ns(lambda: f(1), loop_s, repeat)}


@task
def call_autoprof_done(loop_s: float, repeat: int) -> dict[str, Any]:
    """A decorated call after its schedule finished (the pass-through path)."""
    decorator = _decorator()
    with tempfile.TemporaryDirectory() as out:
        f = decorator(
            name="bench_trivial", warmup=0, out_dir=out, activities=("cpu",),
            schedule=dict(wait=0, warmup=0, active=1, repeat=1),
        )(_trivial)
        for _ in range(5):  # one profiled step, then the schedule is over
            f(1)
        _flush()
        _wait_profiler_off()
        return {"ns_per_call": _best_ns(lambda: f(1), loop_s, repeat)}


@task
def call_disabled(loop_s: float, repeat: int) -> dict[str, Any]:
    """``AUTOPROF=0`` at decoration time (set by the parent): must return the function."""
    if os.environ.get("AUTOPROF") != "0":
        raise RuntimeError("call_disabled needs AUTOPROF=0 in its environment")
    f = _decorator()(_trivial)
    return {"ns_per_call": _best_ns(lambda: f(1), loop_s, repeat),
            "identity": f is _trivial}


def _flush() -> None:
    """Let autoprof finish deferred export work (if it defers any) before timing."""
    flush = getattr(_import_autoprof().autoprof, "flush", None)
    if callable(flush):
        flush()


def _wait_profiler_off(timeout_s: float = 30.0) -> None:
    import torch

    deadline = time.monotonic() + timeout_s
    while torch.autograd._profiler_enabled():
        if time.monotonic() > deadline:
            raise RuntimeError("a torch profiler is still running after the schedule ended")
        time.sleep(0.01)


@task
def region_autoprof(loop_s: float, repeat: int) -> dict[str, Any]:
    """``with autoprof.region(name): pass`` once that region's schedule is over."""
    import inspect

    autoprof = _import_autoprof()
    try:
        region = autoprof.region
    except AttributeError as exc:
        raise Unavailable(f"autoprof.region is not available: {exc}") from exc
    params = inspect.signature(region).parameters
    any_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    opts: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as out:
        for key, value in (("schedule", dict(wait=0, warmup=0, active=1, repeat=1)),
                           ("warmup", 0), ("out_dir", out), ("activities", ("cpu",))):
            if any_kw or key in params:
                opts[key] = value
        os.environ["AUTOPROF_DIR"] = out
        for _ in range(50):  # enough entries to finish even the default schedule
            with region("bench_region", **opts):
                pass
        _flush()
        _wait_profiler_off()

        def enter() -> None:
            with region("bench_region"):
                pass

        return {"ns_per_call": _best_ns(enter, loop_s, repeat), "options": opts}


@task
def region_record_function(loop_s: float, repeat: int) -> dict[str, Any]:
    """``with torch.profiler.record_function(name): pass`` with no profiler running."""
    import torch

    def enter() -> None:
        with torch.profiler.record_function("bench_region"):
            pass

    return {"ns_per_call": _best_ns(enter, loop_s, repeat)}


# --------------------------------------------------------------------------- 2. recording --
def _matmul_add_step(device: str = "cpu") -> Callable[[], Any]:
    """The seed's ``x @ w + b`` at 64x64: float32 on the CPU, bf16 on a GPU."""
    import torch

    torch.manual_seed(0)
    torch.set_num_threads(1)
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    x, w = (torch.randn(64, 64, device=device, dtype=dtype) for _ in range(2))
    b = torch.randn(64, device=device, dtype=dtype)

    def step() -> Any:
        return torch.matmul(x, w) + b

    return step


_PROFILER_OPTIONS: dict[str, Any] = dict(record_shapes=True, with_flops=True, profile_memory=False,
                                         with_stack=False, with_modules=False)


def _activities(device: str) -> tuple[str, ...]:
    return ("cpu",) if device == "cpu" else ("cpu", "cuda")


def _run_autoprof_loop(active: int, warmup_calls: int, trailing: int, out: str,
                       device: str = "cpu") -> tuple[list[float], int]:
    """Profiled loop under @autoprof; returns call start times and the first active index."""
    step = _matmul_add_step(device)
    f = _decorator()(
        name="bench_step", warmup=warmup_calls, out_dir=out, activities=_activities(device),
        schedule=dict(wait=1, warmup=1, active=active, repeat=1), **_PROFILER_OPTIONS,
    )(step)
    marks = []
    for _ in range(warmup_calls + 2 + active + trailing):
        marks.append(time.perf_counter())
        f()
    marks.append(time.perf_counter())
    return marks, warmup_calls + 2


def _run_torch_loop(active: int, warmup_calls: int, trailing: int, out: str,
                    device: str = "cpu") -> tuple[list[float], int, float]:
    """The same loop written by hand with torch.profiler; on_trace_ready exports the trace.

    Returns call start times, the first active index, and the export_chrome_trace time."""
    import torch.profiler as tp

    step = _matmul_add_step(device)
    kinds = {"cpu": tp.ProfilerActivity.CPU, "cuda": tp.ProfilerActivity.CUDA}
    export_s = [0.0]

    def on_ready(prof: Any) -> None:
        t0 = time.perf_counter()
        prof.export_chrome_trace(os.path.join(out, f"bench.{time.time_ns()}.pt.trace.json"))
        export_s[0] = time.perf_counter() - t0

    marks = []
    for _ in range(warmup_calls):
        marks.append(time.perf_counter())
        step()
    with tp.profile(
        activities=[kinds[a] for a in _activities(device)],
        schedule=tp.schedule(wait=1, warmup=1, active=active, repeat=1),
        on_trace_ready=on_ready, **_PROFILER_OPTIONS,
    ) as prof:
        for _ in range(2 + active):
            marks.append(time.perf_counter())
            with tp.record_function("bench_step"):
                step()
            prof.step()
    for _ in range(trailing):
        marks.append(time.perf_counter())
        step()
    marks.append(time.perf_counter())
    return marks, warmup_calls + 2, export_s[0]


@task
def recording(kind: str, active: int, warmup_calls: int, device: str = "cpu"
              ) -> dict[str, Any]:
    """Steps/s over the active steps only: from the first active call's start to the last
    active call's start, so the profiler's start and the final export are both outside.
    On a GPU the calls only launch (no sync per step), as in a training loop."""
    with tempfile.TemporaryDirectory() as out:
        if kind == "autoprof":
            marks, first = _run_autoprof_loop(active, warmup_calls, 0, out, device)
            _flush()  # its deferred writes must end before the folder is removed
        else:
            marks, first, _ = _run_torch_loop(active, warmup_calls, 0, out, device)
    last = first + active - 1
    window_s = marks[last] - marks[first]
    step_us = sorted((b - a) * 1e6 for a, b in zip(marks[first:last], marks[first + 1:last + 1],
                                                    strict=True))
    return {"steps_per_s": (active - 1) / window_s, "window_s": window_s, "active": active,
            "step_us_p10": step_us[len(step_us) // 10], "step_us_p50": step_us[len(step_us) // 2]}


# ------------------------------------------------------------------------------ 3. export --
@task
def export(kind: str, active: int, warmup_calls: int, trailing: int, out: str
           ) -> dict[str, Any]:
    """Time the program is blocked at the end of a run, artifacts written into ``out``.

    Blocked = time from the last active call's start to the end of ``trailing`` plain calls
    after it, minus what those calls cost without a profiler (median warm-up call). For the
    hand-written loop that covers the last ``prof.step()`` (stop + export_chrome_trace) and
    the profiler's exit; for autoprof, whatever its wrapper does there. Work autoprof defers
    off the user's path (``autoprof.flush()`` waits for it) is reported as ``deferred_s``;
    the parent also records how long the process took to exit after ``done_unix``."""
    export_alone_s = float("nan")
    if kind == "autoprof":
        marks, first = _run_autoprof_loop(active, warmup_calls, trailing, out)
    else:
        marks, first, export_alone_s = _run_torch_loop(active, warmup_calls, trailing, out)
    durations = [b - a for a, b in zip(marks, marks[1:], strict=False)]
    plain_s = statistics.median(durations[:warmup_calls])
    last = first + active - 1
    tail_calls = len(durations) - last
    blocked_s = (marks[-1] - marks[last]) - tail_calls * plain_s
    t0 = time.perf_counter()
    if kind == "autoprof":
        _flush()
    deferred_s = time.perf_counter() - t0
    return {"blocked_s": blocked_s, "deferred_s": deferred_s,
            "export_chrome_trace_s": export_alone_s, "done_unix": time.time()}


def count_trace_events(out: str) -> int:
    """Events in every trace under ``out`` (run by the parent, after the child exited)."""
    import gzip

    total = 0
    for path in Path(out).rglob("*.pt.trace.json*"):
        opener: Any = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rb") as fh:
            total += len(json.loads(fh.read()).get("traceEvents", []))
    return total


# ------------------------------------------------------------------------- 4. load + HTA --
def _preimport_frames() -> float:
    t0 = time.perf_counter()
    import numpy  # noqa: F401
    import pandas  # noqa: F401

    return time.perf_counter() - t0


@task
def load_autoprof(path: str) -> dict[str, Any]:
    """``autoprof.load(path).summary()``: what the viewer's overview needs."""
    import_s = _preimport_frames()
    t0 = time.perf_counter()
    autoprof = _import_autoprof()
    try:
        import importlib

        # what load and summary run, imported up front as HTA's TraceAnalysis import is
        for module in ("autoprof.analysis.run", "autoprof.analysis.report.summary"):
            importlib.import_module(module)
        load = autoprof.load
    except (ImportError, AttributeError) as exc:
        raise Unavailable(f"autoprof.load is not available: {exc}") from exc
    import_s += time.perf_counter() - t0
    base_rss_mb = proc_status_mb("self", "VmRSS")
    with TreeRss() as tree:
        t1 = time.perf_counter()
        run = load(path)
        t2 = time.perf_counter()
        if not hasattr(run, "summary"):
            raise Unavailable("Run.summary is not available")
        try:
            summary = run.summary()
        except NotImplementedError as exc:
            raise Unavailable(f"Run.summary: {exc}") from exc
        t3 = time.perf_counter()
    json.dumps(summary, default=str)  # the overview must be JSON-able
    # the breakdown's share of that first open: computed once more, outside work_s
    from autoprof.analysis.metrics.breakdown import breakdown

    t4 = time.perf_counter()
    breakdown(run.events, (run.manifest or {}).get("name"))
    breakdown_s = time.perf_counter() - t4
    return {"work_s": t3 - t1, "load_s": t2 - t1, "summary_s": t3 - t2, "import_s": import_s,
            "rows": int(len(run.events)), "base_rss_mb": base_rss_mb,
            "breakdown_s": breakdown_s, "open_without_breakdown_s": t3 - t1 - breakdown_s,
            "tree_peak_rss_mb": tree.peak_mb}


@task
def load_hta(trace_dir: str) -> dict[str, Any]:
    """HTA's ``TraceAnalysis(trace_dir=...)`` construction (run with HTA's own venv)."""
    import logging

    import_s = _preimport_frames()
    t0 = time.perf_counter()
    from hta.trace_analysis import TraceAnalysis

    logging.getLogger("hta").setLevel(logging.ERROR)
    import_s += time.perf_counter() - t0
    base_rss_mb = proc_status_mb("self", "VmRSS")
    with TreeRss() as tree:
        t1 = time.perf_counter()
        analysis = TraceAnalysis(trace_dir=trace_dir)
        t2 = time.perf_counter()
    rows = sum(len(analysis.t.get_trace(r)) for r in analysis.t.get_ranks())
    return {"work_s": t2 - t1, "import_s": import_s, "rows": rows, "base_rss_mb": base_rss_mb,
            "tree_peak_rss_mb": tree.peak_mb}


# ---------------------------------------------------------------- 5. off the program's path --
def _buckets(step: Callable[[], Any], seconds: float, bucket_s: float) -> list[float]:
    """Mean per-call time (us) of ``step`` in consecutive buckets of ``bucket_s``: a stall
    anywhere in a bucket counts (a median would hide it)."""
    out = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        calls = 0
        t_bucket = time.perf_counter()
        while (elapsed := time.perf_counter() - t_bucket) < bucket_s:
            step()
            calls += 1
        out.append(elapsed / calls * 1e6)
    return out


@task
def after_window(kind: str, active: int, seconds: float, bucket_s: float, out: str
                 ) -> dict[str, Any]:
    """The plain loop's per-call time in buckets right after a profiled window ends, over
    its time before the run in the same process; and the RSS the finished run left behind
    (VmRSS after the run's files are written minus VmRSS before its profiler started, with
    torch.profiler imported and the loop warmed up before the first reading, so the
    difference between autoprof and the hand-written loop is autoprof's own)."""
    import torch.profiler  # noqa: F401  (imported before the first RSS reading)

    step = _matmul_add_step()
    for _ in range(500):
        step()
    before = _buckets(step, 1.0, bucket_s)
    rss_before = proc_status_mb("self", "VmRSS")
    if kind == "autoprof":
        _run_autoprof_loop(active, 3, 0, out)
    else:
        _run_torch_loop(active, 3, 0, out)
    after = _buckets(step, seconds, bucket_s)
    t0 = time.perf_counter()
    if kind == "autoprof":
        _flush()
    base = statistics.median(before)
    return {"worst_bucket_ratio": max(after) / base, "median_bucket_ratio":
            statistics.median(after) / base, "first_bucket_ratio": after[0] / base,
            "base_us": base, "after_us": after, "flush_s": time.perf_counter() - t0,
            "rss_added_mb": proc_status_mb("self", "VmRSS") - rss_before,
            "imports": sorted(m for m in ("pandas", "pyarrow", "msgspec") if m in sys.modules)}


def main(argv: list[str]) -> int:
    name, kwargs = argv[0], json.loads(argv[1]) if len(argv) > 1 else {}
    try:
        result = TASKS[name](**kwargs)
    except Unavailable as exc:
        result = {"unavailable": str(exc)}
    emit(result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
