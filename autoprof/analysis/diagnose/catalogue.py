"""The fix catalogue's entries that read the run as a whole, beside the replayed fixes.

| cause | fix | found as |
| --- | --- | --- |
| `autograd_inference` | `inference-mode` | a graph built, no backward (inference_mode.py) |
| `cpu_threads` | `set-num-threads` | CPU steps that wait for cores (threads.py) |
| `recompiles` | `compile-dynamic` | compiling again for new shapes (recompiles.py) |

Each predicts its own gain (no replay) and states its own `prediction_error`; one is offered
only when its gain is at least MIN_SPEEDUP (code_fixes.py), and then ranked with the other
opportunities by `predicted_speedup` (predictions.ranked), on CPU-only runs as on GPU ones.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from autoprof.analysis.diagnose.code_fixes import MIN_SPEEDUP
from autoprof.analysis.diagnose.inference_mode import autograd_inference
from autoprof.analysis.diagnose.recompiles import recompiles
from autoprof.analysis.diagnose.threads import threads_fix

if TYPE_CHECKING:
    from autoprof.analysis.analysis import Analysis


def catalogue_fixes(ctx: Analysis, step_us: float) -> list[dict[str, Any]]:
    """The entries of the module doc that `ctx` shows (`step_us`: the mean profiled step)."""
    found = [autograd_inference(ctx.events, step_us, ctx.reference), threads_fix(ctx),
             recompiles(ctx)]
    return [o for o in found if o is not None and o["predicted_speedup"] >= MIN_SPEEDUP]
