"""The registry of fixes, by name, in the order they are tried."""

from autoprof.record.whatif.fixes import (
    bf16,
    channels_last,
    compile,
    compile_reduce_overhead,
    cuda_graph,
    inference_mode,
)
from autoprof.record.whatif.fixes.base import Applied, Fix, NotApplicable

FIXES: dict[str, Fix] = {
    f.name: f
    for f in (
        compile.FIX,
        compile_reduce_overhead.FIX,
        cuda_graph.FIX,
        inference_mode.FIX,
        bf16.FIX,
        channels_last.FIX,
    )
}

__all__ = ["FIXES", "Applied", "Fix", "NotApplicable"]
