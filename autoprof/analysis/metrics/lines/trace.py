"""Read a source-lines trace: every ``cpu_op`` with the user's line, module path and
innermost user function that enclose it on its thread.

The recording side labels each torch call made from user code with
``autoprof::line <path>:<line> (<function>)`` and each module call with
``autoprof::module <path>``; torch's own ``python_function`` events (``with_stack``) give
the innermost user function for ops no label covers (autograd's backward). A frame is the
user's unless it is torch's, autoprof's, an installed package's or the standard library's.
Where a user's line calls into a library (``model.generate()``, ``trainer.train()``), each op
also takes the library frame nearest it (``library_frame``: the innermost frame of an installed
package other than torch below the user's frames), which splits that one line's time by the
library code that called torch.

Backward that runs where no user frame encloses it (autograd's device threads on a GPU)
takes the line of the forward op that made its node: a backward node's op
(``autograd::engine::evaluate_function: AddmmBackward0`` and the node itself) carries the
``Sequence number`` of the forward op that recorded it (``Fwd thread id`` non-zero), and
every op inside the node takes that forward op's line and module. Backward with a user
frame of its own (on CPU it runs on the calling thread, under ``loss.backward()``) keeps it.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoprof.analysis.loader.errors import TraceError
from autoprof.analysis.loader.source import read_bytes
from autoprof.runfolder import confine, lines_name

LINES_GLOB = lines_name("*")  # the run folder's source-lines traces (runfolder.lines_name)
LINE_LABEL = "autoprof::line "
MODULE_LABEL = "autoprof::module "
GRAPH_LAUNCHES = frozenset({"cudaGraphLaunch", "cuGraphLaunch"})  # a CUDA graph's replay
KERNELS_KEY = "autoprofInductorKernels"  # graph key -> kernel -> lines (record.lines_graphs)
_FRAME = re.compile(r"^(?P<path>.+)\((?P<line>\d+)\): (?P<func>.+)$")
_RANK = re.compile(r"^lines\.rank(?P<rank>\d+)\.")
_STDLIB = re.compile(r"/lib/python3[.0-9]*/")
_STDLIB_NAMES = frozenset(sys.stdlib_module_names)
_NOT_USER = ("torch/", "autoprof/", "site-packages/", "dist-packages/", "/torchinductor_", "<")


@dataclass(frozen=True)
class LinesOp:
    """One op of the source-lines step (``source``: ``path:line (function)`` or "")."""

    tid: int
    name: str
    ts_us: float
    source: str
    module: str
    library: str = ""  # the library frame nearest the op inside the user's (library_frame)


def find_lines_files(run_dir: Path, refused: list[str] | None = None) -> dict[int, Path]:
    """The source-lines traces of a run folder, by rank (0 for a single process): those that
    are regular files inside it (``runfolder.confine``); each other one (a link out of the
    folder, a FIFO) is left out, and its one-line reason added to ``refused`` when given."""
    found: dict[int, Path] = {}
    if not run_dir.is_dir():
        return found
    for path in sorted(run_dir.glob(LINES_GLOB)):
        problem = confine.refusal(path, run_dir)
        if problem is not None:
            if refused is not None:
                refused.append(problem)
            continue
        match = _RANK.match(path.name)
        found.setdefault(int(match["rank"]) if match else 0, path)
    return found


def lines_folder(path: str | Path | None) -> Path | None:
    """The folder whose source-lines traces go with a run's ``path``: the run folder, or the
    folder of a trace file inside one."""
    if path is None:
        return None
    folder = Path(path)
    return folder.parent if folder.is_file() else folder


def lines_files_of(path: str | Path | None) -> dict[int, Path]:
    """The source-lines traces that go with a run's ``path``, by rank ({} when none)."""
    folder = lines_folder(path)
    return find_lines_files(folder) if folder is not None else {}


def user_frame(name: str) -> str:
    """``path:line (function)`` of a ``python_function`` event that is a user frame, or
    ""; its line is the one the frame entered at (torch's tracer records no other)."""
    match = _FRAME.match(name)
    if match is None:
        return ""
    path = match["path"]
    if any(part in path for part in _NOT_USER) or path.startswith(_NOT_USER):
        return ""
    if path.startswith("/") and _STDLIB.search(path):
        return ""
    if not path.startswith("/") and path.split("/", 1)[0].removesuffix(".py") in _STDLIB_NAMES:
        return ""
    return f"{path}:{match['line']} ({match['func']})"


_INSTALLED = re.compile(r"(?:site|dist)-packages/(?P<rest>.+)$")
_NOT_LIBRARY = frozenset({"torch", "torchgen", "functorch", "autoprof"})


def library_frame(name: str) -> str:
    """``path:line (function)`` of a ``python_function`` event in an installed package
    other than torch (transformers, accelerate, lightning, ...): the library code a user's
    line calls into, or "" (the path is kept from the package's folder on:
    ``transformers/generation/utils.py:2012 (generate)``)."""
    match = _FRAME.match(name)
    installed = _INSTALLED.search(match["path"]) if match is not None else None
    if match is None or installed is None:
        return ""
    rest = installed["rest"]
    if rest.split("/", 1)[0].removesuffix(".py") in _NOT_LIBRARY:
        return ""
    return f"{rest}:{match['line']} ({match['func']})"


def _sequence(event: dict[str, Any]) -> tuple[int, bool] | None:
    """(sequence number, is a backward node's op) of a cpu_op that carries one."""
    args = event.get("args")
    if not isinstance(args, dict):
        return None
    seq, fwd = args.get("Sequence number"), args.get("Fwd thread id")
    if not isinstance(seq, int) or seq < 0:
        return None
    return seq, isinstance(fwd, int) and fwd != 0


def _kind(event: dict[str, Any]) -> tuple[str, str]:
    """(kind, value) of an event that matters here: op, line, module, frame; else ("", "")."""
    cat, name = event.get("cat"), str(event.get("name", ""))
    if cat == "cpu_op" or (name in GRAPH_LAUNCHES and cat in ("cuda_runtime", "cuda_driver")):
        return "op", name
    if cat == "user_annotation":
        if name.startswith(LINE_LABEL):
            return "line", name[len(LINE_LABEL):]
        if name.startswith(MODULE_LABEL):
            return "module", name[len(MODULE_LABEL):]
        return "", ""
    if cat == "python_function":
        frame = user_frame(name)
        if frame:
            return "frame", frame
        library = library_frame(name)
        return ("library", library) if library else ("", "")
    return "", ""


def _library_inside(stack: list[tuple[float, str, str]]) -> str:
    """The innermost library frame enclosing an op below its innermost user frame: the
    library code that called torch from inside the user's line ("" when the user's own
    code called torch)."""
    for _, kind, value in reversed(stack):
        if kind == "frame":
            return ""
        if kind == "library":
            return value
    return ""


def _innermost(stack: list[tuple[float, str, str]], kind: str) -> str:
    for _, k, value in reversed(stack):
        if k == kind:
            return value
    return ""


Item = tuple[float, float, str, str, "tuple[int, bool] | None"]  # ts, dur, kind, value, seq
Forward = dict[int, tuple[str, str]]  # sequence number -> (line, module) of its forward op


def _thread_ops(events: list[Item], tid: int, forward: Forward, seen: Forward) -> list[LinesOp]:
    """Sweep one thread's events in time order, innermost enclosing labels per op; a
    backward node takes its forward op's line from ``forward`` (the module doc), and each
    forward op with a line is added to ``seen``."""
    events.sort(key=lambda e: (e[0], -e[1]))
    stack: list[tuple[float, str, str]] = []
    ops: list[LinesOp] = []
    for ts, dur, kind, value, seq in events:
        while stack and stack[-1][0] <= ts:
            stack.pop()
        if kind == "op":
            line = _innermost(stack, "line") or _innermost(stack, "frame")
            module = _innermost(stack, "module")
            if seq is not None and seq[1] and not line and seq[0] in forward:
                line, module = forward[seq[0]]
                stack.append((ts + dur, "line", line))  # the ops inside the node take it
                if module:
                    stack.append((ts + dur, "module", module))
            if seq is not None and not seq[1] and line:
                seen.setdefault(seq[0], (line, module))
            ops.append(LinesOp(tid, value, ts, line, module, _library_inside(stack)))
        stack.append((ts + dur, kind, value))
    return ops


@dataclass(frozen=True)
class LinesTrace:
    """A source-lines trace: its ops (cpu_ops and CUDA-graph launches, in time order per
    thread) and, per compiled graph, each inductor kernel's user lines ({} when none)."""

    ops: list[LinesOp]
    kernels: dict[str, dict[str, list[str]]]


def read_lines_trace(path: Path) -> list[LinesOp]:
    """Every cpu_op (and CUDA-graph launch) of the trace at ``path``, in time order per
    thread (threads by id)."""
    return read_lines_file(path).ops


def _kernels(data: Any) -> dict[str, dict[str, list[str]]]:
    raw = data.get(KERNELS_KEY) if isinstance(data, dict) else None
    if not isinstance(raw, dict):
        return {}
    return {str(g): {str(k): [str(s) for s in v] for k, v in kernels.items()
                     if isinstance(v, list)}
            for g, kernels in raw.items() if isinstance(kernels, dict)}


def read_lines_file(path: Path, folder: Path | None = None) -> LinesTrace:
    """The trace at ``path``: its ops and its compiled graphs' kernel lines. Read as the
    loader reads a trace (``loader.source.read_bytes``: a regular file, inside ``folder``
    when given, its gzip expansion bounded by size and ratio); TraceError naming it when
    it cannot be read."""
    decoded = read_bytes(path, folder=folder)
    try:
        data = json.loads(decoded if isinstance(decoded, bytes | bytearray) else decoded[:])
    except (ValueError, RecursionError) as exc:
        raise TraceError(path, f"source-lines trace is not valid JSON ({str(exc)[:120]})"
                         ) from None
    finally:
        del decoded
    return LinesTrace(_ops(data), _kernels(data))


def _ops(data: Any) -> list[LinesOp]:
    raw = data.get("traceEvents", []) if isinstance(data, dict) else data
    threads: dict[int, list[Item]] = {}
    for event in raw:
        if not isinstance(event, dict) or event.get("ph") != "X":
            continue
        kind, value = _kind(event)
        tid = event.get("tid")
        if not kind or not isinstance(tid, int):
            continue
        seq = _sequence(event) if kind == "op" else None
        item = (float(event.get("ts", 0.0)), float(event.get("dur", 0.0)), kind, value, seq)
        threads.setdefault(tid, []).append(item)
    forward: Forward = {}
    first = {tid: _thread_ops(threads[tid], tid, {}, forward) for tid in sorted(threads)}
    ops: list[LinesOp] = []
    for tid in sorted(threads):  # again with the forward ops' lines, where backward lacks one
        lacks = any(not op.source for op in first[tid])
        ops.extend(_thread_ops(threads[tid], tid, forward, {}) if lacks and forward
                   else first[tid])
    return ops
