"""When a run is read rank by rank by itself: the one rule the plain summary and the viewer share.

The merged path (``autoprof.load(run).summary()``) decodes every rank into one events table,
so its memory grows with the ranks (measured in ``benchmarks/ranks.py``: about 7 MB a rank of
20,000 events). The map (``ranks_run.summarize_ranks``) holds one rank's table per worker and
only small per-rank results in the parent, so its memory does not grow with the ranks. A run of
at least ``MAP_MIN_RANKS`` rank traces, or of at least two whose traces total
``MAP_MIN_BYTES`` on disk, is read by the map without being asked (``--jobs N`` still sets the
workers). One trace, or a few small ranks, keeps the merged path and its fuller summary.
"""

from __future__ import annotations

from pathlib import Path

from autoprof.analysis.loader.remote import is_url

MAP_MIN_RANKS = 16  # a run of this many rank traces or more is analysed rank by rank
MAP_MIN_BYTES = 512 * 1024**2  # ... or of two ranks or more whose traces total this on disk


def reads_rank_by_rank(path: str | Path) -> bool:
    """Should the run at ``path`` (a local run folder or folder of traces) be analysed as a
    map over its ranks (module doc)? False for one trace, a URL, or a path that is no run
    (the loader's error is said by the path taken next)."""
    from autoprof.analysis import TraceError
    from autoprof.analysis.loader.inputs import resolve_source

    if is_url(path) or not Path(path).is_dir():
        return False
    try:
        traces = resolve_source(path).traces
    except (TraceError, OSError):
        return False
    if len(traces) >= MAP_MIN_RANKS:
        return True
    if len(traces) < 2:
        return False
    try:
        total_bytes = sum(t.stat().st_size for t in traces if isinstance(t, Path))
    except OSError:
        return False
    return total_bytes >= MAP_MIN_BYTES
