"""``autoprof mcp [DIR]``: the runs of one traces folder, read-only, for MCP clients.

A Model Context Protocol server (the official ``mcp`` SDK, ``autoprof[mcp]``) over stdio, so an
agent or an editor can ask what a person asks ``autoprof summary``. Tools:

- ``list_runs()``: every run folder and loose trace under the folder (path, name, status);
- ``summary(run)``: the summary as ``autoprof summary --json`` prints it (docs/json.md, the
  schema ``autoprof schema`` prints);
- ``summary_markdown(run)``: the same as ``autoprof summary --format markdown``;
- ``top_ops(run, by, n)``: the ops with the most self CPU (or GPU) time;
- ``explain(run, what)``: one diagnostic (by id), one opportunity (by cause) or one op (by
  name): the record with its numbers and hint, and for an op its rows and share of the time.

- ``diff(a, b)``: is run ``b`` faster, slower or the same as run ``a``, how sure, and why, as
  ``autoprof diff A B --json`` prints it (docs/diff.md, the schema ``autoprof schema --diff``
  prints), with ``a`` and ``b`` named by their paths relative to the folder.

Confined like the viewer: a run is named by its path relative to the folder; absolute paths,
``..`` and symlinks that resolve outside the folder are refused, and every trace a run lists
must lie inside it too (``autoprof.load(..., root=...)``); a run's source-lines traces,
``whatif.json`` and manifests are read only from inside its own folder
(``autoprof.runfolder.confine``). Answers and errors name files by their paths relative to
the folder, never by this machine's absolute paths. Nothing is written: the summary
cache is not used, and ``autoprof mcp`` turns the loader's Arrow cache off unless
``AUTOPROF_CACHE`` says otherwise.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

from autoprof import env
from autoprof.integrations._steps import missing_extra

if TYPE_CHECKING:
    from autoprof.analysis import Report

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise missing_extra("mcp", "mcp") from exc

__all__ = ["RunFolder", "build_server", "serve"]

MAX_TOP_OPS = 100
CACHED_RUNS = 8
INSTRUCTIONS = (
    "autoprof explains why a PyTorch program is slow, from torch.profiler runs in one traces "
    "folder. Call list_runs first; then summary_markdown (or summary for JSON) on a run's "
    "path; explain(run, what) with a diagnostic id, an opportunity cause or an op name from "
    "the summary gives that item's numbers and hint; diff(a, b) tells whether run b is "
    "faster or slower than run a, how sure, and why. Times are microseconds unless a key "
    "names another unit. Read-only.")


class RunFolder:
    """The traces folder the tools read, and the runs loaded from it (a few kept)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._spellings = sorted({str(self.root), str(root.absolute())}, key=len, reverse=True)
        if not self.root.is_dir():
            raise NotADirectoryError(f"{root}: not a folder (give the folder of your runs)")
        self._runs: OrderedDict[tuple[str, int], Any] = OrderedDict()

    def resolve(self, run: str) -> Path:
        """The run's path inside the folder; ``ValueError`` for anything outside it."""
        if not run or os.path.isabs(run) or "\0" in run:
            raise ValueError(f"{run!r}: give a run's path relative to the traces folder "
                             "(list_runs shows them)")
        path = (self.root / run).resolve()
        if path != self.root and self.root not in path.parents:
            raise ValueError(f"{run!r}: outside the traces folder; only runs under it are read")
        if not path.exists():
            raise ValueError(f"{run!r}: no such run under the traces folder")
        return path

    def relative(self, path: str | Path) -> str | None:
        """``path`` relative to the folder, or None when it resolves outside it."""
        resolved = Path(path).resolve()
        if resolved != self.root and self.root not in resolved.parents:
            return None
        return resolved.relative_to(self.root).as_posix() or "."

    def without_root(self, value: Any) -> Any:
        """``value`` (an answer: JSON values, or an error's text) with every path under the
        folder written relative to it: the client learns nothing of where it lies."""
        if isinstance(value, str):
            for spelling in self._spellings:
                value = value.replace(spelling + os.sep, "").replace(spelling, ".")
            return value
        if isinstance(value, dict):
            return {self.without_root(k): self.without_root(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.without_root(v) for v in value]
        return value

    def load(self, run: str) -> Any:
        """The loaded run (``autoprof.load`` confined to the folder), kept while unchanged."""
        from autoprof.analysis import load

        path = self.resolve(run)
        key = (str(path), _changed_ns(path))
        cached = self._runs.pop(key, None)
        loaded = cached if cached is not None else load(path, root=self.root)
        self._runs[key] = loaded
        while len(self._runs) > CACHED_RUNS:
            self._runs.popitem(last=False)
        return loaded

    def summary(self, run: str) -> dict[str, Any]:
        """The run's report as its JSON (what ``autoprof summary --json`` prints)."""
        return self.report(run).to_dict()

    def report(self, run: str) -> Report:
        """The run's typed report (report/model)."""
        from autoprof.analysis import summarize

        return summarize(self.load(run))


def _changed_ns(path: Path) -> int:
    manifest = path / "manifest.json"
    try:
        return (manifest if manifest.exists() else path).stat().st_mtime_ns
    except OSError:
        return 0


# -- what the tools answer ------------------------------------------------------------------

def list_runs(folder: RunFolder) -> list[dict[str, Any]]:
    from autoprof.analysis import find_runs
    from autoprof.analysis.report.summary import jsonable

    rows: list[dict[str, Any]] = []
    for row in find_runs(folder.root).to_dict(orient="records"):
        relative = folder.relative(str(row["path"]))
        if relative is None:
            continue  # a symlink out of the folder: never listed
        rows.append(jsonable({"path": relative, "kind": row["kind"], "name": row["name"],
                              "run_id": row["run_id"], "started_at": row["started_at"],
                              "status": row["status"], "world_size": row["world_size"],
                              "error": row["error"]}))
    return rows


def top_ops(folder: RunFolder, run: str, by: Literal["self_cpu", "self_device"],
            n: int) -> list[dict[str, Any]]:
    from autoprof.analysis.report.summary import top_ops as top

    if not 1 <= n <= MAX_TOP_OPS:
        raise ValueError(f"n={n}: ask for 1 to {MAX_TOP_OPS} ops")
    rows: list[dict[str, Any]] = top(folder.load(run).ops(), n)[f"by_{by}"]
    return rows


def explain(folder: RunFolder, run: str, what: str) -> dict[str, Any]:
    """One diagnostic, opportunity or op of the run, with its numbers."""
    from autoprof.analysis.loader.whatif import measured_for

    report = folder.report(run)
    for d in report.diagnostics:
        if d.id == what:
            return {"kind": "diagnostic", **d.to_dict()}
    for o in report.opportunities:
        if o.cause == what:
            fixes = measured_for([r.to_dict() for r in report.whatif], what)
            return {"kind": "opportunity", **o.to_dict(), "measured_fixes": fixes}
    return _explain_op(folder, run, what, report)


def diff(folder: RunFolder, a: str, b: str) -> dict[str, Any]:
    """``autoprof diff a b --json`` over two runs of the folder (each confined to it)."""
    from autoprof.analysis.diff import diff as diff_runs

    result: dict[str, Any] = diff_runs(folder.load(a), folder.load(b)).to_json()
    result["a"], result["b"] = a, b  # the names the client gave, not this machine's paths
    return result


def _explain_op(folder: RunFolder, run: str, name: str,
                report: Report) -> dict[str, Any]:
    from autoprof.analysis.report.summary import jsonable

    ops = folder.load(run).ops()
    rows = ops[ops["name"] == name]
    if rows.empty:
        known = [d.id for d in report.diagnostics] + [o.cause for o in report.opportunities]
        raise ValueError(f"{name!r} is no diagnostic id, opportunity cause or op name of this "
                         f"run (diagnostics and opportunities: {known})")
    self_cpu, self_dev = float(ops["self_cpu_us"].sum()), float(ops["self_device_us"].sum())
    in_opportunities = [{"cause": o.cause, "us_per_step": w.us_per_step}
                        for o in report.opportunities for w in o.where if w.name == name]
    explained: dict[str, Any] = jsonable({
        "kind": "op", "name": name, "rows": rows.to_dict(orient="records"),
        "self_cpu_pct_of_run": 100 * float(rows["self_cpu_us"].sum()) / self_cpu
        if self_cpu else None,
        "self_device_pct_of_run": 100 * float(rows["self_device_us"].sum()) / self_dev
        if self_dev else None,
        "in_opportunities": in_opportunities})
    return explained


# -- the server -----------------------------------------------------------------------------

T = TypeVar("T")


def _answer(folder: RunFolder, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with paths relative to the folder (``RunFolder.without_root``); a
    refusal or a bad run (ValueError, TraceError, OSError) reaches the client as the tool's
    error with its one-line message, not as a crash."""
    try:
        return cast(T, folder.without_root(fn(*args)))
    except (ValueError, OSError) as exc:
        raise ToolError(folder.without_root(str(exc))) from None


def build_server(root: Path) -> MCPServer:
    """The MCP server over ``root``; each tool is read-only."""
    folder = RunFolder(root)
    server: MCPServer = MCPServer("autoprof", instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                idempotent_hint=True, open_world_hint=False)

    @server.tool(name="list_runs", annotations=read_only)
    def list_runs_tool() -> list[dict[str, Any]]:
        """Every run folder and loose trace under the traces folder: path (relative to the
        folder: the `run` argument of the other tools), kind, name, run_id, status."""
        return _answer(folder, list_runs, folder)

    @server.tool(annotations=read_only)
    def summary(run: str) -> dict[str, Any]:
        """The run's summary as `autoprof summary --json` prints it: verdict, breakdown,
        opportunities, diagnostics, top ops, what-if results (times in microseconds)."""
        return _answer(folder, folder.summary, run)

    @server.tool(annotations=read_only)
    def summary_markdown(run: str) -> str:
        """The run's summary as compact GitHub-flavoured Markdown (`--format markdown`)."""
        from autoprof.analysis.report.markdown import render_markdown

        return _answer(folder, lambda: render_markdown(folder.report(run)))

    @server.tool(name="top_ops", annotations=read_only)
    def top_ops_tool(run: str, by: Literal["self_cpu", "self_device"] = "self_cpu",
                     n: int = 10) -> list[dict[str, Any]]:
        """The n ops (1-100) with the most self CPU time, or GPU rows with the most self
        device time (by='self_device')."""
        return _answer(folder, top_ops, folder, run, by, n)

    @server.tool(name="explain", annotations=read_only)
    def explain_tool(run: str, what: str) -> dict[str, Any]:
        """One diagnostic (its id), opportunity (its cause) or op (its name) of the run: the
        record with its evidence and hint, or the op's rows and share of the run's time."""
        return _answer(folder, explain, folder, run, what)

    @server.tool(name="diff", annotations=read_only)
    def diff_tool(a: str, b: str) -> dict[str, Any]:
        """Is run b faster, slower or the same as run a (the baseline), how sure, and why:
        comparability and every difference, the step time's change with its 95% bootstrap
        interval, and the buckets, ops and kernels ranked by their share of the change."""
        return _answer(folder, diff, folder, a, b)

    del list_runs_tool, summary, summary_markdown, top_ops_tool, explain_tool, diff_tool
    return server


def serve(root: Path) -> int:
    """Run the server on stdin/stdout until the client closes it (``autoprof mcp``). The
    loader's Arrow cache beside big traces stays off unless ``AUTOPROF_CACHE`` is set: the
    server writes nothing into the folder it serves."""
    env.default_off("AUTOPROF_CACHE")
    build_server(root).run("stdio")
    return 0
