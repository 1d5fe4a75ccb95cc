"""autoprof viewer: the entry script (`streamlit run viewer/app.py [-- traces_dir]` or
`autoprof view`).

It owns navigation, shared state and loading; the pages in views/ only display what
`autoprof.analysis` computed. The traces folder is fixed when the server starts (argument,
else $AUTOPROF_DIR, else ./traces): a client chooses runs inside it, never another folder.
It opens on the Overview when the folder holds one run, else on the Runs page.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import streamlit as st

from autoprof import env
from autoprof.viewer import _guard
from autoprof.viewer._context import Context, publish
from autoprof.viewer._loading import find_runs, load_run, load_upload
from autoprof.viewer._paths import default_root, resolve_root
from autoprof.viewer._phases import analysing
from autoprof.viewer._runlist import run_label, run_paths
from autoprof.viewer._text import md_escape
from autoprof.viewer.views import PAGE_FILES, PAGES

SOURCES = ("Run in folder", "Trace by path", "Upload")
COMPARE_DEFAULT = 12  # runs preselected on the Compare page: the selected one and its kin


def _root_from_args() -> str:
    """`streamlit run viewer/app.py -- DIR` sets sys.argv to [app.py, DIR]; else the default."""
    ours = bool(sys.argv) and Path(sys.argv[0]).name == "app.py"
    args = [a for a in sys.argv[1:] if not a.startswith("-")] if ours else []
    return args[0] if args else str(default_root())


def _folder() -> Context:
    """The traces folder the server was started with (no client can change it), listed."""
    root = resolve_root(_root_from_args())
    ctx = Context(root=root, root_exists=root.is_dir())
    st.sidebar.caption(f"Traces folder: {md_escape(root)}")
    if st.sidebar.button("Refresh", help="Rescan the folder for new runs"):
        find_runs.clear()
    if ctx.root_exists:
        ctx.runs, ctx.runs_error = find_runs(str(root))
    return ctx


def _sidebar_selection(ctx: Context) -> None:
    source = st.sidebar.radio("Show", SOURCES, key="source", horizontal=True)
    if source == "Trace by path":
        rel = st.sidebar.text_input(
            "Trace or run folder (inside the traces folder)", key="open_path",
            help="A .json / .json.gz torch.profiler trace, or a run folder.",
        )
        if rel.strip() and ctx.root_exists:
            ctx.current = load_run(ctx.root, Path(rel.strip()))
        return
    if source == "Upload":
        up = st.sidebar.file_uploader(
            "torch.profiler trace", type=["json", "gz"], key="upload",
            help="Written to a private temporary folder, then loaded.",
        )
        if up is not None:
            ctx.current = load_upload(up.name, up.getvalue())
        return
    paths = run_paths(ctx.runs)
    if not paths:
        return
    labels = {p: run_label(ctx.runs, p, ctx.root) for p in paths}
    rel_of = {p: _relative(p, ctx.root) for p in paths}
    wanted = _link(st.query_params.get("run"))  # ?run=<folder relative to the traces folder>
    if wanted != st.session_state.get("_run_from_url"):  # a new link: follow it once
        st.session_state["_run_from_url"] = wanted
        if wanted in rel_of.values():
            st.session_state["run"] = next(p for p in paths if rel_of[p] == wanted)
    chosen = st.sidebar.selectbox(
        "Run", paths, key="run", format_func=lambda p: labels.get(p, p),
    )
    if chosen:
        st.query_params["run"] = st.session_state["_run_from_url"] = rel_of[chosen]
        ctx.current = load_run(ctx.root, Path(chosen), labels.get(chosen))


def _link(value: str | None) -> str | None:
    """A run link as the run list spells it: 'a/b/', './a/b' and 'a//b' all name 'a/b'."""
    if not value or not value.strip():
        return value
    return os.path.normpath(value.strip()).strip("/")


def _relative(path: str, root: Path) -> str:
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return path


def _status(ctx: Context, path: str) -> str | None:
    if ctx.runs is None:
        return None
    match = ctx.runs.loc[ctx.runs["path"].astype(str) == path, "status"]
    value = match.iloc[0] if len(match) else None
    return None if value is None or value != value else str(value)  # NaN -> None


def _name(ctx: Context, path: str | None) -> str | None:
    if ctx.runs is None or path is None or "name" not in ctx.runs.columns:
        return None
    match = ctx.runs.loc[ctx.runs["path"].astype(str) == path, "name"]
    return str(match.iloc[0]) if len(match) else None


def preselected(ctx: Context, paths: list[str], current: str | None) -> list[str]:
    """The runs the Compare page starts with: the selected run (else the newest) and the
    other complete runs of the same function, newest first, at most COMPARE_DEFAULT. Runs of
    other functions are one click away; preselecting every run drew unrelated ones."""
    anchor = current if current in paths else (paths[0] if paths else None)
    if anchor is None:
        return []
    name = _name(ctx, anchor)
    kin = [p for p in paths if p != anchor and _status(ctx, p) in ("complete", None)
           and name is not None and _name(ctx, p) == name]
    return ([anchor] + kin)[:COMPARE_DEFAULT]


def _sidebar_compare(ctx: Context) -> None:
    """The runs to compare: the selected run always, beside the runs the user picks (at
    first, the other complete runs of its function, newest first)."""
    paths = run_paths(ctx.runs)
    labels = {p: run_label(ctx.runs, p, ctx.root) for p in paths}
    current = str(ctx.current.path) if ctx.current is not None else None
    first = preselected(ctx, paths, current)
    chosen = st.sidebar.multiselect(
        "Runs to compare", paths, default=first, key="compare",
        format_func=lambda p: labels.get(p, p),
    )
    ctx.compared = [load_run(ctx.root, Path(p), labels.get(p)) for p in chosen]
    if ctx.current is not None and ctx.current.path not in {c.path for c in ctx.compared}:
        ctx.compared.insert(0, ctx.current)  # the selected run is always in the comparison


def main() -> None:
    st.set_page_config(page_title="autoprof viewer", layout="wide")
    _guard.enforce()
    # traces here may be rewritten by the programs that record them: read, never memory-map
    # (a mapped trace cut short while it is read ends the whole server with SIGBUS)
    env.default_off("AUTOPROF_MMAP")
    ctx = _folder()
    _sidebar_selection(ctx)
    first = "overview" if len(run_paths(ctx.runs)) == 1 else "runs"
    pages = [
        st.Page(PAGE_FILES / file, title=title, url_path=slug, default=(slug == first))
        for file, title, slug in PAGES
    ]
    page = st.navigation(pages, position="top")
    if page.url_path == "compare":
        _sidebar_compare(ctx)
    st.sidebar.caption("autoprof: everything is computed by autoprof.analysis; nothing leaves "
                       "this machine.")
    publish(ctx)
    with analysing(ctx.current.label if ctx.current is not None else "the run"):
        page.run()  # a first open's analysis phases are named while the page waits for them


if __name__ == "__main__":  # `streamlit run` executes this file as __main__
    main()
