"""The quick tier: `bash scripts/test.sh --quick` runs the tests of these files that are not
marked `slow` (nor `browser`), a few minutes on two cores, touching every layer.

Each layer of docs/architecture.md has files here whose tests assert on real input: a real
recording through torch.profiler (record), the committed H200 traces and the bad-input corpus
(load), the metrics and findings on them (analyse), the summary, text and schema (report),
the Streamlit pages through AppTest (viewer) and `autoprof summary` / `diff` / `lines` (CLI).
A file named here that no longer exists fails tests/test_readme.py, so the tier cannot
quietly shrink. tests/conftest.py marks their tests `quick`.
"""

from __future__ import annotations

QUICK: dict[str, tuple[str, ...]] = {
    "record": (
        "tests/core/test_api.py",  # real recordings: @autoprof, region, flush
        "tests/core/test_options.py",
        "tests/core/test_session_table.py",
        "tests/core/test_manifest_record.py",
        "tests/core/test_finish_keeps_traces.py",
        "tests/core/test_check_own_options.py",
        "tests/core/test_call_edges.py",
        "tests/whatif/test_whatif_fixes.py",
    ),
    "runfolder": (
        "tests/core/test_finish_runfolder.py",
        "tests/reliability/test_owned_writes.py",
        "tests/analysis/layers/test_manifest_readers.py",
    ),
    "load": (
        "tests/analysis/loader/test_bad_input.py",
        "tests/analysis/loader/test_events_h200.py",
        "tests/analysis/loader/test_loader_nesting.py",
        "tests/analysis/loader/test_inputs.py",
        "tests/analysis/loader/test_cache.py",
        "tests/analysis/loader/test_synthetic.py",
        "tests/test_committed_store.py",
    ),
    "analyse": (
        "tests/analysis/attribution/test_breakdown.py",
        "tests/analysis/attribution/test_verdict_opportunities.py",
        "tests/analysis/attribution/test_h200_runs.py",
        "tests/analysis/diag/test_h200.py",
        "tests/analysis/diag/test_diagnostics.py",
        "tests/analysis/efficiency/test_flops.py",
        "tests/analysis/efficiency/test_efficiency.py",
        "tests/analysis/ops/test_ops_h200.py",
        "tests/analysis/ops/test_ops_unit.py",
        "tests/analysis/memory/test_timeline.py",
        "tests/analysis/replay/test_replay_synthetic.py",
        "tests/analysis/replay/test_replay_loop.py",
        "tests/analysis/lines/test_lines_unit.py",
        "tests/analysis/lines/test_lines_graphs.py",
        "tests/analysis/scale/test_merge_order.py",
        "tests/analysis/diff/test_diff.py",
        "tests/analysis/h200/test_validation_runs.py",
        "tests/analysis/replay/test_predictions.py",
    ),
    "report": (
        "tests/analysis/efficiency/test_report.py",
        "tests/analysis/memory/test_checks_report.py",
        "tests/analysis/layers/test_one_route.py",
        "tests/whatif/test_whatif_compare.py",
        "tests/integrations/test_mcp.py",
        "tests/reliability/test_read_confinement.py",
    ),
    "viewer": (
        "tests/viewer/test_units.py",
        "tests/viewer/test_readable_pages.py",  # AppTest: every page of a CPU run
        "tests/viewer/test_confinement.py",
        "tests/viewer/test_serves_loopback.py",
    ),
    "cli": (
        "tests/analysis/diag/test_summary_listing.py",
        "tests/analysis/diag/test_cli_name_folder.py",
        "tests/analysis/diag/test_summary_cli.py",
        "tests/analysis/diff/test_diff_cli.py",
        "tests/analysis/lines/test_lines_show.py",
        "tests/test_readme.py",
    ),
}

QUICK_FILES = frozenset(f for files in QUICK.values() for f in files)

# The files whose tests time things and judge the times (A/B what-if rounds, the watcher's
# drift, waits, threads): `bash scripts/test.sh` runs them alone, after the two workers, so
# that the other worker's load is not read as a slowdown. tests/conftest.py marks their
# tests `serial`.
SERIAL_FILES = frozenset({
    "tests/whatif/test_whatif_ab.py",
    "tests/whatif/test_whatif_same_inputs.py",
    "tests/whatif/test_whatif_timing.py",
    "tests/whatif/test_whatif_harness.py",
    "tests/core/test_watch_windows.py",
    "tests/core/test_wait_timing.py",
    "tests/core/test_after_window.py",
    "tests/core/test_threads.py",
    "tests/analysis/test_profiler_overhead_noise.py",
})

# The longest files (a minute or more of one worker's time, measured on two cores): the
# collection puts them first, and under xdist support/xdist_scopes.py hands them out first
# (xdist's own queue, by number of tests, put these few-test files among the last), so
# that the two workers do not end on one of them alone.
FIRST_FILES = (
    "tests/reliability/test_interrupted_windows.py",
    "tests/analysis/report/test_report_model.py",
    "tests/integrations/test_schema.py",
    "tests/analysis/replay/test_replay_h200.py",
    "tests/analysis/lines/test_lines_regions.py",
    "tests/integrations/test_callbacks.py",
)
