"""The fix catalogue's entries that read the run as a whole, beside the replayed fixes.

| cause | fix | found as |
| --- | --- | --- |
| `autograd_inference` | `inference-mode` | a graph built, no backward (inference_mode.py) |
| `cpu_threads` | `set-num-threads` | CPU steps that wait for cores (threads.py) |
| `recompiles` | `compile-dynamic` | compiling again for new shapes (recompiles.py) |
| `per_sample_loader` | `batched-dataset` | a fetch of per-sample ops (batched_loader.py) |

Each predicts its own gain (no replay) and states its own `prediction_error`; one is offered
only when its gain is at least MIN_SPEEDUP (code_fixes.py), and then ranked with the other
opportunities by `predicted_speedup` (predictions.ranked), on CPU-only runs as on GPU ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from autoprof.analysis.diagnose.batched_loader import per_sample_loader
from autoprof.analysis.diagnose.code_fixes import MIN_SPEEDUP
from autoprof.analysis.diagnose.cold_start_cpu import is_compiled
from autoprof.analysis.diagnose.inference_mode import autograd_inference
from autoprof.analysis.diagnose.opportunities import opportunities
from autoprof.analysis.diagnose.predictions import for_compiled, ranked, with_predictions
from autoprof.analysis.diagnose.recompiles import recompiles
from autoprof.analysis.diagnose.threads import threads_fix
from autoprof.analysis.metrics.cpu_ops import heavy_ops

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis


def catalogue_fixes(ctx: Analysis, step_us: float) -> list[dict[str, Any]]:
    """The entries of the module doc that `ctx` shows (`step_us`: the mean profiled step)."""
    found = [autograd_inference(ctx.events, step_us, ctx.reference), threads_fix(ctx),
             recompiles(ctx), per_sample_loader(ctx.events, ctx.breakdown.steps)]
    return [o for o in found if o is not None and o["predicted_speedup"] >= MIN_SPEEDUP]


def _sources(ctx: Analysis) -> pd.Series | None:
    """Each events-table row's source line (metrics/lines), None where the run has none."""
    lines = ctx.source_lines
    return lines.attribution.rows["source"] if lines.available else None


def ranked_opportunities(ctx: Analysis) -> list[dict[str, Any]]:
    """`Analysis.opportunities`: the breakdown's causes (opportunities.py) with each fix's
    prediction (predictions.py) and the entries of the module doc, ranked together where any
    is offered; a torch.compile'd run's hints do not say to compile it."""
    bd = ctx.breakdown
    compiled = is_compiled(ctx)
    step_us = float(bd.steps["step_us"].mean()) if len(bd.steps) else 0.0
    cpu_ops = None if ctx.has_gpu else heavy_ops(ctx.events, bd.steps)
    opps = with_predictions(opportunities(bd, cpu_ops=cpu_ops, compiled=compiled), ctx.events,
                            ctx.call_region, ctx.reference, step_us, ctx.graph_input_copy_us,
                            ctx.device_name,
                            ctx.record.cudnn_benchmark if ctx.record is not None else None,
                            lambda: _sources(ctx))
    extra = catalogue_fixes(ctx, step_us)
    out = ranked(opps + extra) if extra else opps
    return for_compiled(out) if compiled else out
