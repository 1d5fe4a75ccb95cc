"""The catalogue's entries whose fix deletes work the trace shows (span_fixes.py), together.

| cause | fix | found as |
| --- | --- | --- |
| `conv_layout` | `channels-last` | cuDNN's layout transposes around convolutions (conv_layout.py) |
| `zeroed_grads` | `zero-grad-none` | gradients zeroed under `Optimizer.zero_grad` (zero_grad.py) |
| `ddp_accumulation` | `ddp-no-sync` | an all-reduce after every micro-step (ddp_no_sync.py) |
| `host_tensors` | `tensor-on-device` | small host-made tensors copied (host_tensors.py) |
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from autoprof.analysis.diagnose.conv_layout import conv_layout
from autoprof.analysis.diagnose.ddp_no_sync import ddp_accumulation
from autoprof.analysis.diagnose.host_tensors import host_tensors
from autoprof.analysis.diagnose.zero_grad import zeroed_grads
from autoprof.analysis.metrics.replay.changes import Change


def deleting_fixes(events: pd.DataFrame, n_steps: int, step_us: float,
                   baseline: Sequence[Change], cudnn_benchmark: bool | None = None
                   ) -> list[dict[str, Any]]:
    """The entries of the module doc the run shows, each with its prediction (`baseline`:
    the changes pacing the host to the untraced call; `cudnn_benchmark`: the manifest's
    flag, None where not recorded)."""
    found = [conv_layout(events, n_steps, step_us, baseline, cudnn_benchmark),
             zeroed_grads(events, n_steps, step_us, baseline),
             host_tensors(events, n_steps, step_us, baseline),
             ddp_accumulation(events, n_steps, step_us, baseline)]
    return [o for o in found if o is not None]
