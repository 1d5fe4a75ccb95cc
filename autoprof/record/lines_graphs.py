"""What the source-lines step keeps of compiled graphs and CUDA graphs, beyond the ops it
labels (``autoprof.record.lines``).

- **CUDA graphs**: ``CUDAGraph.replay`` is no torch function (the label mode never sees it),
  so while the lines step records, the replay is wrapped in the same
  ``autoprof::line <path>:<line> (<function>)`` label: the ``cudaGraphLaunch`` it issues
  gets the user's line, and the analysis gives that line to the replay's kernels in the
  measured steps.
- **torch.compile (inductor)**: with inductor's provenance tracking on
  (``INDUCTOR_PROVENANCE=1``, ``TORCH_COMPILE_DEBUG=1`` or
  ``torch._inductor.config.trace.provenance_tracking_level = 1`` before compiling), each
  compiled graph (``CompiledFxGraph``) keeps, per kernel, the stack traces of the FX nodes
  it fused. At the end of the lines step (outside every measured step) they are read from
  the graphs alive in the process, reduced to the innermost user frame per kernel, and kept
  in the lines trace (key :data:`KERNELS_KEY`: graph key -> kernel name -> ``[path:line
  (function), ...]``). autoprof never imports inductor nor turns its provenance on.
"""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Callable
from typing import Any

KERNELS_KEY = "autoprofInductorKernels"
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


class ReplayLabels:
    """``torch.cuda.CUDAGraph.replay`` wrapped in a line label while the lines step records
    (nothing when torch has no CUDAGraph class)."""

    def __init__(self, torch: Any, where: Callable[[], str | None],
                 label: Callable[[str | None], Any]) -> None:
        self._cls = getattr(getattr(torch, "cuda", None), "CUDAGraph", None)
        self._own = self._cls is not None and "replay" in vars(self._cls)
        self._original = getattr(self._cls, "replay", None)
        if self._cls is None or self._original is None:
            self._cls = None
            return
        original = self._original

        def replay(graph: Any, *args: Any, **kwargs: Any) -> Any:
            try:  # where() reads its caller's caller: the code that called replay()
                rf = label(where())
            except Exception:
                rf = None
            try:
                return original(graph, *args, **kwargs)
            finally:
                if rf is not None:
                    try:
                        rf.__exit__(None, None, None)
                    except Exception:
                        pass

        self._cls.replay = replay

    def remove(self) -> None:
        if self._cls is None:
            return
        if self._own:
            self._cls.replay = self._original
        else:
            delattr(self._cls, "replay")
        self._cls = None


def user_source(stack_trace: str, is_user: Callable[[str], bool]) -> str:
    """``path:line (function)`` of the innermost user frame of a traceback-style stack
    trace (an FX node's ``stack_trace``), or ""."""
    found = ""
    for match in _FRAME.finditer(stack_trace):
        if is_user(match["path"]):
            found = f"{match['path']}:{match['line']} ({match['func']})"
    return found


def inductor_kernels(is_user: Callable[[str], bool]) -> dict[str, dict[str, list[str]]]:
    """graph key -> kernel name -> its user lines, from every compiled graph alive in the
    process that kept provenance ({} when inductor was never imported or kept none)."""
    output_code = sys.modules.get("torch._inductor.output_code")
    cls = getattr(output_code, "CompiledFxGraph", None)
    if cls is None:
        return {}
    import json

    found: dict[str, dict[str, list[str]]] = {}
    for graph in gc.get_objects():
        if type(graph) is not cls:  # type(), not isinstance: weak proxies raise there
            continue
        text = getattr(graph, "inductor_provenance_stack_traces_str", None)
        key = getattr(graph, "_fx_graph_cache_key", None) or f"id{id(graph)}"
        if not text:
            continue
        kernels: dict[str, list[str]] = {}
        for name, traces in json.loads(text).items():
            sources = [user_source(t, is_user) for t in traces if isinstance(t, str)]
            kept = list(dict.fromkeys(s for s in sources if s))
            if kept:  # "triton_poi_fused_gelu_0:2" -> the kernel's name in the trace
                kernels.setdefault(str(name).rpartition(":")[0] or str(name), kept)
        if kernels:
            found[str(key)] = kernels
    return found
