"""The `autoprof` command: `autoprof summary PATH [--json]` and `autoprof view [DIR]`.

The report is rendered from the typed Report whose JSON `--json` prints
(autoprof.analysis.report.model); this module formats and launches, it computes no
statistic. Bad input gives one line on stderr, `autoprof: error: <path>: <problem>`, and exit
status 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autoprof import env as settings
from autoprof import runfolder
from autoprof.cli.common import EXIT_BAD_INPUT, error_line, say
from autoprof.cli.diff import add_diff_parser
from autoprof.cli.lines import add_lines_parser
from autoprof.cli.progress import PhaseLine, Progress, one_line_warning
from autoprof.cli.runs import is_folder_of_runs, runs_markdown, summary_of_runs

if TYPE_CHECKING:
    from autoprof.analysis import AnalysisOptions

# Nothing from autoprof.analysis (pandas, numpy) is imported at module level: `autoprof view`
# and `--help` start without them; each command imports what it uses.

# --- summary -------------------------------------------------------------------------------



def analysis_options(args: argparse.Namespace) -> AnalysisOptions:
    """The command line's analysis flags as the typed options the analysis takes."""
    from autoprof.analysis import AnalysisOptions

    return AnalysisOptions(peak_tflops=getattr(args, "peak_tflops", None) or settings.peak_tflops(),
                           peak_gbps=getattr(args, "peak_gbps", None) or settings.peak_gbps())


def cmd_summary(args: argparse.Namespace) -> int:
    from autoprof.analysis.loader.remote import is_url

    if args.path and is_url(args.path):  # read where it lies, through fsspec
        if args.jobs or args.dask:
            from autoprof.analysis.scale.text import summary_at_scale

            return summary_at_scale(args.path, args.jobs, args.dask, args.json,
                                    fmt=args.format)
        return _print_summary(args.path, args)
    path = Path(args.path) if args.path else settings.out_dir()
    if not path.exists():
        return error_line(path, "no such file or directory")
    if args.jobs or args.dask:  # many ranks: each analysed on its own, then a reduce
        from autoprof.analysis.scale.text import summary_at_scale

        return summary_at_scale(path, args.jobs, args.dask, args.json, fmt=args.format)
    if is_folder_of_runs(path):
        if args.format == "markdown" and not args.json:
            return runs_markdown(path)
        return summary_of_runs(path, args.json)
    _finish_left_recording(path)
    from autoprof.analysis.scale.auto import reads_rank_by_rank

    if reads_rank_by_rank(path):  # memory bounded in the ranks
        from autoprof.analysis.scale.text import summary_at_scale

        return summary_at_scale(path, None, None, args.json, chosen=True, fmt=args.format)
    return _print_summary(path, args)


def _print_summary(path: str | Path, args: argparse.Namespace) -> int:
    """Load one run (a local path or a URL) and print its summary as asked."""
    from autoprof.analysis import TraceError, load

    progress = Progress(str(path))
    try:
        run = load(path, progress=progress, options=analysis_options(args))
    except TraceError as err:
        progress.failed()
        say(f"autoprof: error: {err}")
        return EXIT_BAD_INPUT
    except OSError as err:
        progress.failed()
        return error_line(path, err.strerror or str(err))
    progress.done()
    _memory_notes(path, run.load_warnings)
    with PhaseLine(str(path)):
        report = run.report()  # cached beside big traces (report/summary_cache.py)
    from autoprof.analysis.diff.triggered import lead

    first = lead(run)  # a triggered window: the comparison with its healthy one comes first
    if args.json:
        summary = report.to_dict()
        if first is not None:
            summary = {"comparison": first.to_json(), **summary}
        sys.stdout.write(json.dumps(summary, allow_nan=False) + "\n")
    else:
        from autoprof.analysis.report.render import render

        lead_text = "" if first is None else (
            first.markdown() if args.format == "markdown" else first.text())
        sys.stdout.write(lead_text + render(report, args.format))
    return 0


def _memory_notes(path: str | Path, load_warnings: list[str]) -> None:
    """The loader's note on garbled memory byte counts (dropped, not shown as a peak of
    -9.2e18), one line each on stderr: the summary has no place for load warnings."""
    from autoprof.analysis.loader.memory_events import HUGE_BYTES_NOTE

    for warning in load_warnings:
        if HUGE_BYTES_NOTE in warning:
            say(f"autoprof: warning: {path}: {warning}")


def _finish_left_recording(path: Path) -> None:
    """A run folder its process left 'recording' (killed before its finisher ran): finish it
    first, with one line on stderr. Anything wrong with the folder is the loader's to say."""
    if not (path.is_dir() and (path / runfolder.MANIFEST).is_file()):
        return
    from autoprof.record.finisher.folder import FinishError, finish_folder

    try:
        result = finish_folder(path, this_host_only=True)
    except runfolder.FolderLocked as err:  # another process holds it: show it as it is
        say(f"autoprof: {err}; reading the run as it is")
        return
    except (FinishError, OSError):
        return
    if result is not None:
        say(f"autoprof: {path} was left recording; finished it: {result.status}")


# --- view ----------------------------------------------------------------------------------

def viewer_app() -> Path:
    """The viewer's entry script, shipped in the package (autoprof/viewer/app.py)."""
    return Path(__file__).resolve().parents[1] / "viewer" / "app.py"


def view_command(app: Path, directory: Path | None, address: str, port: int | None
                 ) -> tuple[list[str], dict[str, str]]:
    """The streamlit command line and environment that `autoprof view` runs."""
    argv = [sys.executable, "-m", "streamlit", "run", str(app),
            "--server.address", address, "--browser.gatherUsageStats", "false",
            "--server.headless", "true", "--server.fileWatcherType", "none",
            "--server.maxUploadSize", "512", "--client.toolbarMode", "viewer"]
    if port is not None:
        argv += ["--server.port", str(port)]
    env = dict(os.environ)
    env.pop("AUTOPROF_VIEW_REMOTE", None)  # consent is this command line's, not inherited
    if not settings.is_loopback(address):  # --address ADDR: serving other machines, asked for
        env["AUTOPROF_VIEW_REMOTE"] = "1"
    if directory is not None:
        env["AUTOPROF_DIR"] = str(directory.resolve())
    return argv, env


def cmd_view(args: argparse.Namespace) -> int:
    app = viewer_app()
    try:
        import streamlit  # noqa: F401
    except ImportError:
        return error_line(app, "the viewer needs streamlit: pip install streamlit altair")
    directory = Path(args.dir) if args.dir else None
    if directory is not None and not directory.is_dir():
        return error_line(directory, "not a directory (give the folder that holds your runs)")
    argv, env = view_command(app, directory, args.address, args.port)
    shown = directory.resolve() if directory else settings.out_dir()
    print(f"autoprof: viewer for {shown} on http://{args.address}:{args.port or 8501}",
          file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    # become the server (exec, not a child): Ctrl-C and a SIGTERM from a process manager
    # reach streamlit itself, and no server is left running when `autoprof view` is stopped
    try:
        os.execve(argv[0], argv, env)
    except OSError as exc:
        return error_line(Path(argv[0]), f"could not start streamlit ({exc.strerror or exc})")


# --- schema, mcp ---------------------------------------------------------------------------

def cmd_schema(args: argparse.Namespace) -> int:
    from autoprof.analysis.report.schema import DIFF_SCHEMA_FILE, SCHEMA_FILE, schema_text

    sys.stdout.write(schema_text(DIFF_SCHEMA_FILE if args.diff else SCHEMA_FILE))
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from autoprof.integrations.mcp import serve
    except ImportError as exc:
        return error_line("autoprof mcp", str(exc))
    return int(serve(Path(args.dir) if args.dir else settings.out_dir()))


# --- entry point ---------------------------------------------------------------------------

def _positive(text: str) -> float:
    """A positive, finite number for a flag; argparse names the flag when this raises."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number: {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="autoprof", description="Explain torch.profiler runs: why is it slow?")
    sub = parser.add_subparsers(dest="command", required=True)
    summary = sub.add_parser(
        "summary", help="verdict, evidence, diagnostics and top ops of a run or trace")
    summary.add_argument("path", nargs="?", help="a run folder, a trace (.json / .json.gz), a "
                         "folder of per-rank traces, or a folder of runs (one line each; "
                         "default: $AUTOPROF_DIR, else ./traces, as for view)")
    summary.add_argument("--json", action="store_true", help="print one JSON object")
    summary.add_argument("--format", choices=("text", "markdown"), default="text",
                         help="text (default) or GitHub-flavoured markdown (--json wins)")
    summary.add_argument("--peak-tflops", type=_positive, default=None, metavar="TFLOPS",
                         help="the device's peak TFLOP/s for the efficiency analysis (every "
                              "dtype; default: the peaks table, else $AUTOPROF_PEAK_TFLOPS)")
    summary.add_argument("--peak-gbps", type=_positive, default=None, metavar="GBPS",
                         help="the device's peak memory bandwidth in GB/s (default: the peaks "
                              "table, else $AUTOPROF_PEAK_GBPS)")
    summary.add_argument("--jobs", type=int, default=None, metavar="N",
                         help="analyse each rank on its own in N local processes, then reduce")
    summary.add_argument("--dask", default=None, metavar="SCHEDULER_ADDRESS",
                         help="the same, on a Dask cluster (pip install 'autoprof[dask]')")
    summary.set_defaults(func=cmd_summary)
    view = sub.add_parser("view", help="open the Streamlit viewer on a traces folder")
    view.add_argument("dir", nargs="?", help="traces folder (default: $AUTOPROF_DIR, else "
                                             "./traces)")
    view.add_argument("--address", default="127.0.0.1",
                      help="address to bind (default 127.0.0.1: this machine only; another "
                      "address serves other machines on purpose)")
    view.add_argument("--port", type=int, default=None, help="port (default: streamlit's 8501)")
    view.set_defaults(func=cmd_view)
    schema = sub.add_parser("schema", help="print the JSON Schema of `autoprof summary "
                                           "--json` (--diff: of `autoprof diff --json`)")
    schema.add_argument("--diff", action="store_true", help="the diff's schema")
    schema.set_defaults(func=cmd_schema)
    mcp = sub.add_parser("mcp", help="serve a traces folder's runs to MCP clients over stdio "
                                     "(read-only; needs autoprof[mcp])")
    mcp.add_argument("dir", nargs="?", help="traces folder (default: $AUTOPROF_DIR, else "
                                            "./traces)")
    mcp.set_defaults(func=cmd_mcp)
    add_diff_parser(sub)
    add_lines_parser(sub)
    return parser


def _replace_unencodable(stream: Any) -> None:
    """Names and paths the terminal's encoding cannot show print as `?`, not a traceback."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(errors="replace")


def main(argv: list[str] | None = None) -> int:
    _replace_unencodable(sys.stdout)
    _replace_unencodable(sys.stderr)
    args = build_parser().parse_args(argv)
    warnings.showwarning = one_line_warning
    try:
        return int(args.func(args))
    except OSError as err:  # a path the OS refuses (too long, a loop): its one line
        return error_line(err.filename if err.filename is not None else getattr(args, "path", ""),
                      err.strerror or str(err))


if __name__ == "__main__":
    sys.exit(main())
