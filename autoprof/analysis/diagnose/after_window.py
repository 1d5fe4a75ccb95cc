"""`after-window`: the program's first calls after the profiling window ran much slower than
the same calls untraced before it.

autoprof times the first calls after the window (the manifest's `after_window_call_ms`, each
timed as a warm-up call is: host clock, the device synchronized at both ends on CUDA) and
sets them against the steady untraced call (the median of `untraced_calls_us`: the warm-up
calls after the first, and the wait steps). Those calls are the user's, outside every
recorded step: this finding says what the window cost the program after it ended, never what
the profiled steps hold.

It fires only when the slowest of those calls took AFTER_WINDOW_RATIO times the steady call
and together they took AFTER_WINDOW_EXTRA_MS more than as many steady calls. The cause it
names comes from the run's own record: intra-op threads that fill every CPU the process may
use wait for a core whenever anything else runs (the run's finisher works on the trace then,
at idle priority, and other programs); otherwise it says what ran then: torch's stop and
export in the process just before, the finisher beside it (benchmarks/gpu/
launch_cost_after_window.py measures each one's share).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from autoprof.analysis.diagnose.records import Diagnostic, rounded
from autoprof.analysis.metrics.profiler_overhead import untraced_calls_us
from autoprof.analysis.metrics.stats import median

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis
    from autoprof.runfolder import Manifest

AFTER_WINDOW_RATIO = 2.0  # the slowest call after the window / the steady untraced call
AFTER_WINDOW_EXTRA_MS = 5.0  # ... and the calls after the window took this much more in all


def after_window_applies(ctx: Analysis) -> bool:
    record = ctx.record
    return record is not None and bool(record.after_window_call_ms) and bool(
        untraced_calls_us(record))


def after_window(ctx: Analysis) -> Diagnostic | None:
    record = ctx.record
    if record is None or not after_window_applies(ctx):
        return None
    after_ms = [float(v) for v in record.after_window_call_ms]
    steady_ms = median(untraced_calls_us(record)) / 1000.0
    if not steady_ms > 0:
        return None
    extra_ms = sum(after_ms) - len(after_ms) * steady_ms
    slowdown = max(after_ms) / steady_ms
    if slowdown < AFTER_WINDOW_RATIO or extra_ms < AFTER_WINDOW_EXTRA_MS:
        return None
    evidence = {
        "after_window_call_ms": [rounded(v, 3) for v in after_ms],
        "steady_call_ms": rounded(steady_ms, 3),
        "slowdown": rounded(slowdown),
        "extra_ms": rounded(extra_ms),
        "ratio_threshold": AFTER_WINDOW_RATIO,
        "extra_threshold_ms": AFTER_WINDOW_EXTRA_MS,
        "intra_op_threads": record.intra_op_threads,
        "cpus": record.cpus,
    }
    message = (f"The {len(after_ms)} calls right after the profiling window took "
               f"{extra_ms:.1f} ms more than {len(after_ms)} steady calls of "
               f"{steady_ms:.3f} ms (the slowest {slowdown:.1f}x): {_why(record)}. The "
               "profiled steps are not affected; the program pays this once, as the window "
               "ends.")
    hint = ("Nothing to fix in the program for the profile's sake. If those first calls "
            "matter (a latency budget, a benchmark started right after the window), call "
            "autoprof.flush() first: it waits for the finisher.")
    if _threads_fill_cpus(record):
        hint = (f"Run torch with fewer intra-op threads than CPUs "
                f"(torch.set_num_threads({max(1, (record.cpus or 2) - 1)})) so one core stays "
                "free for whatever else runs, or call autoprof.flush() before the calls that "
                "must be fast: it waits for the finisher.")
    return Diagnostic("after-window", "info", message, evidence, hint)


def _threads_fill_cpus(record: Manifest) -> bool:
    threads, cpus = record.intra_op_threads, record.cpus
    return threads is not None and cpus is not None and threads >= cpus > 0


def _why(record: Manifest) -> str:
    if _threads_fill_cpus(record):
        return (f"torch's {record.intra_op_threads} intra-op threads fill all {record.cpus} "
                "CPUs, so each parallel op waits for a core whenever anything else runs (the "
                "run's finisher works on the trace then, at idle priority, and other "
                "programs)")
    return ("they ran right after torch's profiler stopped and exported in this process, as "
            "the run's finisher started on the trace beside it (at idle priority), beside "
            "whatever else the machine ran")
