"""Each opportunity as the prediction of one named fix, replayed (metrics/replay/).

An opportunity's `max_speedup` bounds what removing its bucket could give; the replay predicts
what the one fix its hint names gives: `fix` (the what-if's name where one exists:
`cuda-graph`), `predicted_speedup` (the median over the profiled steps: over MAX_STEPS of
them, spread evenly, on a rank of more than twice that, metrics/replay/sample.py) and
`predicted_spread` (median, quartiles, min and max). The hint then speaks of that fix, so
the number and the words are one change:

| cause | fix | replayed as |
| --- | --- | --- |
| `host_launch` | `cuda-graph` | the call captured as one CUDA graph (without its syncs) |
| `host_sync` | `remove-sync` | no wait at its syncs; `.item()` goes whole (sync_reads.py) |
| `gpu_memory` | `pin-memory` | host-to-device copies non-blocking from pinned memory |
| `between_calls` | `loader-workers` | the time between calls and the fetches hidden by workers |
| `loader_in_call` | `loader-workers` | the fetches inside the call hidden by workers |

`between_calls` is an opportunity of its own when at least MIN_BETWEEN_PCT of each profiled
step passes between two calls and a DataLoader's `__next__` is its largest part (the
caller's loop, metrics/replay/loop.py; a device sync there is the recorder's or the
caller's harness, not an input to overlap); `loader_in_call` where, instead, a DataLoader
without workers is read inside the call for MIN_FETCH_PCT of the step (loader_in_call.py).
A fused optimizer and a bias add folded into its GEMM are offered beside them when the
trace shows the unfused form (code_fixes.py), and a source line's chain of memory-bound
kernels fused into one where the run has its lines (fuse_elementwise.py). The
replay's host costs are first scaled to the untraced calls (metrics/replay/baseline.py): the
whole host when the step is the call, the call's own host time when the step holds the
caller's loop too (the warm-up calls time the call alone). `loader-workers` is predicted for
WORKERS workers (`fixes.py`), no faster than they can fetch. In a loop that waits for
DataLoader worker processes (`baseline.worker_loop`: a multi-process DataLoader's fetch is
the largest part of the time between calls) only `loader-workers` is predicted: the workers
make the batches in processes the trace does not show, so how far a faster step would gain
is not known, and every other fix keeps its bound and says why. A cause whose gain exists only
under the profiler (the replay, scaled to the untraced calls, predicts under NOISE_SPEEDUP),
or that the replay predicts under it with no untraced calls to scale to, keeps its bound and
says so, instead of a fix.

The order is what each named fix is predicted to give: the opportunities with a replayed
prediction first, largest `predicted_speedup` first (the top opportunity is the fix predicted
to gain most), then those with only a bound, by time as the breakdown gave them; each says
which (`ranked_by`: "predicted_speedup" or "max_speedup"). Runs without GPU work, or whose
replay fails, keep their bounds and their order by time, unless one of the catalogue's
whole-run entries (catalogue.py) is offered: then they are ranked with it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from autoprof.analysis.diagnose.code_fixes import code_fixes, unpredicted
from autoprof.analysis.diagnose.error_band import band_of
from autoprof.analysis.diagnose.fuse_elementwise import fuse_elementwise
from autoprof.analysis.diagnose.loader_in_call import fetch_in_call
from autoprof.analysis.diagnose.op_loop import python_loop
from autoprof.analysis.diagnose.sync_reads import Sources, read_hint, read_spans
from autoprof.analysis.kinds import BUCKETS
from autoprof.analysis.loader.phase import phase
from autoprof.analysis.metrics.replay.baseline import (
    Reference,
    fetch_first,
    host_baseline,
    loader_loop,
    worker_loop,
)
from autoprof.analysis.metrics.replay.capturable import per_parameter_steps
from autoprof.analysis.metrics.replay.changes import Change
from autoprof.analysis.metrics.replay.fixes import (
    WORKERS,
    FixName,
    graph_drops_syncs,
    predict_fix,
)
from autoprof.analysis.metrics.replay.graph import shared_graphs
from autoprof.analysis.metrics.replay.loop import Loop, loop_split
from autoprof.analysis.metrics.replay.sample import MAX_STEPS

FIX_OF_CAUSE: dict[str, FixName] = {
    "host_launch": "cuda-graph",
    "host_sync": "remove-sync",
    "gpu_memory": "pin-memory",
    "between_calls": "loader-workers",
    "loader_in_call": "loader-workers",
}
FIX_HINTS: dict[FixName, str] = {
    "cuda-graph": "capture the call as a CUDA graph (static inputs, copy each batch in, "
                  "replay), or torch.compile(mode='reduce-overhead'), which does the same",
    "remove-sync": "remove the sync: no .item(), .cpu(), printing or branching on device "
                   "tensors inside the step; accumulate on the device and read once",
    "pin-memory": "pin host memory (DataLoader(pin_memory=True)) and copy with "
                  "non_blocking=True so copies overlap compute",
    "loader-workers": f"the GPU waits for the next batch: DataLoader(num_workers={WORKERS}, "
                      "pin_memory=True, prefetch_factor=2) and non_blocking copies",
}
# a torch.compile'd run is told the mode of the compile it has, not to compile
COMPILED_GRAPH_HINT = ("capture the call as a CUDA graph (static inputs, copy each batch in, "
                       "replay), or give its torch.compile mode='reduce-overhead', which does "
                       "the same")
SYNC_FREE_GRAPH_HINT = ("remove the sync inside the call first (capture refuses .item(), "
                        ".cpu(), printing, `if tensor:` and mask indexing on device tensors: "
                        "keep values on the device, torch.where for a mask), then capture the "
                        "call as a CUDA graph (static inputs, copy each batch in, replay; Adam "
                        "and AdamW with capturable=True)")
LOOP_HINT = ("the caller's loop between two calls holds the GPU idle: move that work out of "
             "the loop, or overlap it (a background thread, CUDA streams)")
# what another finding shows that a CUDA graph cannot capture as written, by its cause
GRAPH_BLOCKERS: dict[str, str] = {
    "amp_scaler": "GradScaler's step reads found_inf with .item() each step (bf16 autocast "
                  "without a scaler, or a fused optimizer, first)",
}
PER_PARAMETER_NOTE = ("the estimate is for Adam/AdamW built with capturable=True and foreach "
                      "left unset: kept at foreach=False its capturable loop adds about 12 "
                      "one-element kernels a parameter")
NOISE_SPEEDUP = 1.01  # a predicted gain below this is none the profiler-free step would show


def _between(loop: Loop) -> dict[str, Any]:
    """The time between calls as an opportunity (before its prediction)."""
    steps = loop.steps
    us = float(steps["between_us"].mean())
    step_us = float(steps["step_us"].mean())
    return {"cause": "between_calls", "us_per_step": us,
            "pct_of_step": float(steps["between_pct"].median()),
            "max_speedup": step_us / (step_us - us) if step_us > us else None,
            "where": [{"name": str(r["name"]), "us_per_step": float(r["us"])}
                      for _, r in loop.where.head(3).iterrows()],
            "hint": FIX_HINTS["loader-workers"] if _loader_between(loop) else LOOP_HINT}


def _loader_between(loop: Loop) -> bool:
    """Whether a DataLoader's fetch is the largest part of the time between calls."""
    return fetch_first(loop.where["name"].tolist())


def _predicted(opp: dict[str, Any], events: pd.DataFrame, call: str | None,
               baseline: list[Change], input_copy_us: float, workers: bool,
               sources: Sources | None = None) -> dict[str, Any]:
    fix = FIX_OF_CAUSE.get(str(opp.get("cause")))
    if fix == "loader-workers" and opp.get("hint") != FIX_HINTS[fix]:
        fix = None  # no DataLoader between the calls: no fix the replay knows
    if fix is None or (fix in ("cuda-graph", "loader-workers") and call is None):
        return opp
    if workers and fix != "loader-workers":
        return unpredicted(opp)
    reads = read_spans(events, sources) if fix == "remove-sync" else None
    got = predict_fix(events, fix, call or "", baseline, input_copy_us=input_copy_us,
                      reads=reads[:2] if reads is not None else None)
    spread = got["predicted_spread"]
    if not np.isfinite(spread["median"]):
        return opp
    out = {**opp, **got}
    if spread["median"] < NOISE_SPEEDUP:
        why = ("replayed at the untraced call's pace this gains nothing: the gap exists only "
               "under the profiler") if baseline else "replayed, this fix gains nothing"
        out["hint"] = f"{opp['hint']} ({why})"
        out["fix"] = None
    elif fix == "cuda-graph" and call is not None and graph_drops_syncs(events, call):
        out["hint"] = SYNC_FREE_GRAPH_HINT
    else:
        out["hint"] = FIX_HINTS[fix] + read_hint(reads)
    return out


def with_predictions(opps: list[dict[str, Any]], events: pd.DataFrame, call: str | None,
                     ref: Reference | None, step_us: float = 0.0,
                     input_copy_us: float = 0.0, device: str | None = None,
                     cudnn_benchmark: bool | None = None,
                     sources: Sources | None = None) -> list[dict[str, Any]]:
    """`opps` with each one's named fix and replayed speedup, the time between calls added
    when it is large enough, and the one-line fixes of code_fixes.py (the module doc; `ref`:
    the untraced times the host is paced to, metrics/replay/baseline.py; `step_us`: the mean
    profiled step; `input_copy_us`: the GPU time a CUDA graph of the call spends copying its
    inputs in, metrics/replay/changes.py; `device`: the device's name, for what its link
    gives a pinned copy, metrics/host_link.py; `cudnn_benchmark`: the manifest's flag;
    `sources`: gives each row's source line where the run has them, metrics/lines; called
    only where a step reads a scalar, sync_reads.py)."""
    if not len(events) or not bool(events["is_gpu_work"].any()):
        return opps
    try:
        # one table replayed many times: its graph built once, of at most MAX_STEPS steps
        with shared_graphs(MAX_STEPS):
            out = _with_predictions(opps, events, call, ref, step_us, input_copy_us, device,
                                    cudnn_benchmark, sources)
    except ValueError:
        return opps
    return ranked(one_per_fix(out))


def one_per_fix(opps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each fix offered once: where two opportunities name the same fix (a bucket's
    `pin-memory` and the pageable copies' own), the one predicted to gain most keeps it (on
    a tie, a cause of its own over a bucket: `_keeps_over`) and the others keep their
    bound, naming it."""
    best: dict[str, dict[str, Any]] = {}
    for o in opps:
        if _has_prediction(o):
            held = best.get(str(o["fix"]))
            if held is None or _keeps_over(o, held):
                best[str(o["fix"])] = o
    out = []
    for o in opps:
        keeper = best.get(str(o.get("fix")))
        if _has_prediction(o) and keeper is not None and keeper is not o:
            o = {**o, "fix": None,
                 "hint": f"{o['hint']} (the same fix as {keeper['cause']}, offered there)"}
        out.append(o)
    return out


def _keeps_over(o: dict[str, Any], held: dict[str, Any]) -> bool:
    """Whether `o` holds its fix rather than `held`: predicted to gain more, or as much
    where `held` is a breakdown bucket and `o` a cause of its own (the pageable copies
    over `gpu_memory`: its hint names the copies)."""
    mine, theirs = float(o["predicted_speedup"]), float(held["predicted_speedup"])
    return mine > theirs or (mine == theirs and held.get("cause") in BUCKETS
                             and o.get("cause") not in BUCKETS)


def _with_predictions(opps: list[dict[str, Any]], events: pd.DataFrame, call: str | None,
                      ref: Reference | None, step_us: float, input_copy_us: float,
                      device: str | None = None, cudnn_benchmark: bool | None = None,
                      sources: Sources | None = None) -> list[dict[str, Any]]:
    """`with_predictions` for a table with GPU work (unranked), its replays sharing one
    graph."""
    phase("predictions: the loop around the call")
    loop = loop_split(events, call) if call is not None else None
    out = list(opps)
    if loop is not None and loader_loop(loop):
        out.append(_between(loop))
    elif call is not None:  # a DataLoader without workers read inside the call
        fetch = fetch_in_call(events, call, step_us, FIX_HINTS["loader-workers"])
        out += [fetch] if fetch is not None else []
    phase("predictions: fitting the host to the untraced step")
    baseline = host_baseline(events, call, loop, ref or Reference())
    workers = worker_loop(events, loop)
    phase("predictions: replaying each fix")
    out = _beyond_the_sync([_predicted(o, events, call, baseline, input_copy_us, workers,
                                       sources) for o in out])
    phase("predictions: code fixes")
    loop_fix = python_loop(events, step_us, call, ref) if not workers else None
    fixes = code_fixes(events, call, baseline, step_us, workers, device, cudnn_benchmark)
    fused = fuse_elementwise(events, step_us, baseline, sources) if not workers else None
    fixes += [fused] if fused is not None else []
    out = _graph_blockers(out + fixes + ([loop_fix] if loop_fix is not None else []))
    return _graph_optimizer_form(out, events)


def _graph_optimizer_form(opps: list[dict[str, Any]], events: pd.DataFrame
                          ) -> list[dict[str, Any]]:
    """A CUDA graph's hint says which capturable form of a per-parameter Adam/AdamW its
    estimate replays (capturable.py): the foreach form, foreach left unset."""
    if not any(o.get("fix") == "cuda-graph" for o in opps) or not per_parameter_steps(events):
        return opps
    return _with_graph_note(opps, PER_PARAMETER_NOTE)


def _with_graph_note(opps: list[dict[str, Any]], note: str) -> list[dict[str, Any]]:
    """`opps` with `note` after the CUDA graph's hint, in parentheses."""
    return [{**o, "hint": f"{o['hint']} ({note})"} if o.get("fix") == "cuda-graph" else o
            for o in opps]


def _graph_blockers(opps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A CUDA graph's hint names what in the call cannot be captured as written, where
    another finding shows it (GRAPH_BLOCKERS)."""
    causes = {str(o.get("cause")) for o in opps}
    named = [text for cause, text in GRAPH_BLOCKERS.items() if cause in causes]
    if not named:
        return opps
    return _with_graph_note(opps, "cannot be captured as written: " + "; ".join(named))


def _beyond_the_sync(opps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A graph that must drop the call's sync also gains what removing the sync gains; when
    it gains no more (under NOISE_SPEEDUP beyond it), capturing adds nothing to that one-line
    fix: the graph keeps its bound and says so."""
    sync = next((o for o in opps if o.get("fix") == "remove-sync"), None)
    if sync is None:
        return opps
    out = []
    for o in opps:
        if o.get("fix") == "cuda-graph" and o.get("hint") == SYNC_FREE_GRAPH_HINT and \
                float(o["predicted_speedup"]) < float(sync["predicted_speedup"]) * NOISE_SPEEDUP:
            o = {**o, "fix": None, "hint": f"{FIX_HINTS['cuda-graph']} (replayed, it gains no "
                                           "more than removing the sync alone)"}
        out.append(o)
    return out


def _has_prediction(opp: dict[str, Any]) -> bool:
    value = opp.get("predicted_speedup")
    return opp.get("fix") is not None and isinstance(value, int | float) and \
        bool(np.isfinite(value))


def ranked(opps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The opportunities with a prediction by `predicted_speedup`, largest first, then those
    with only a bound in their given order; each marked with what ranked it."""
    predicted = _graph_hint_names_loop(sorted((o for o in opps if _has_prediction(o)),
                                              key=lambda o: -float(o["predicted_speedup"])))
    bound = [o for o in opps if not _has_prediction(o)]
    return [{**o, "ranked_by": "predicted_speedup",
             "predicted_interval": predicted_interval(o)} for o in predicted] + \
        [{**o, "ranked_by": "max_speedup"} for o in bound]


def _graph_hint_names_loop(opps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`opps` (ranked) with a CUDA graph's hint telling of a vectorised loop
    (diagnose/op_loop.py) beside it: the graph would replay the loop's launches, vectorising
    removes them. The order stays the predictions': on the H100's fresh tabular step a graph
    of the step as written measured 7.0x and vectorising its column loops 2.2x."""
    if not any(o.get("fix") == "vectorise" for o in opps):
        return opps
    return [o if o.get("fix") != "cuda-graph" else
            {**o, "hint": f"{o['hint']} (or vectorise the Python loop: a graph replays its "
                          "launches, one op over the batch removes them)"}
            for o in opps]


def for_compiled(opps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`opps` of a torch.compile'd run: a CUDA graph's hint names the compile's mode
    (COMPILED_GRAPH_HINT) instead of telling it to compile."""
    return [{**o, "hint": str(o["hint"]).replace(FIX_HINTS["cuda-graph"], COMPILED_GRAPH_HINT)}
            if o.get("fix") == "cuda-graph" and o.get("hint") else o for o in opps]


def predicted_interval(opp: dict[str, Any]) -> dict[str, float]:
    """The interval a measured gain of `opp`'s fix is expected in: the prediction's own spread
    over the steps, widened by its fix family's model-error band (error_band.py: measured on
    the development truth); an entry that states its own `prediction_error` (its model has
    no development truth to speak of) keeps at least that either way of the measured gain
    (|predicted / measured - 1| <= the error). `low` <= the estimate <= `high`, so no
    ceiling ever reads below its estimate."""
    value = float(opp["predicted_speedup"])
    spread = opp.get("predicted_spread") or {}
    low, high = band_of(opp.get("fix")).widen(value, float(spread.get("min", value)),
                                              float(spread.get("max", value)))
    if "prediction_error" in opp:
        error = float(opp["prediction_error"])
        low, high = min(low, value / (1.0 + error)), max(high, value / (1.0 - error))
    return {"low": min(low, value), "high": max(high, value)}
