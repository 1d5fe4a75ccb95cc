"""The text report `autoprof summary` prints, rendered from the typed report (report/model,
the record `--json` prints).

One function per section; `render_summary` puts them in order. Computes no statistic. The
records the report keeps as the metrics wrote them (``overhead``, ``efficiency``, ``memory``,
``profiler_overhead``, a step's breakdown) are read as such.
"""

from __future__ import annotations

import textwrap
from typing import Any

from autoprof.analysis.kinds import BUCKET_MARKS
from autoprof.analysis.report.lines import at_line, evidence_sources
from autoprof.analysis.report.model import (
    Breakdown,
    Diagnostic,
    OpRow,
    Report,
    StepRow,
    WhatIfResult,
)
from autoprof.analysis.report.model.base import given
from autoprof.analysis.report.ranks_text import rank_by_rank_lines
from autoprof.analysis.report.speed import predicted, speed_text
from autoprof.analysis.report.whatif_text import missed_because, whatif_outcome
from autoprof.runfolder.whatif import same_inputs_note
from autoprof.units import fmt_bytes, fmt_pct, fmt_us, fmt_value, safe_strings

WIDTH = 100


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{float(value):.1f}%"


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent) or [indent]


def _evidence(s: Report) -> list[str]:
    ov = s.overhead or {}
    ratio = s.cpu_gpu_ratio
    lines = [
        f"  self CPU time         {fmt_us(s.self_cpu_us)}",
        f"  self GPU time         {fmt_us(s.self_gpu_us)}"
        + (f"  (CPU/GPU {ratio:.1f}x)" if ratio is not None else ""),
        f"  GPU busy              {_pct(s.gpu_busy_pct)} of a {fmt_us(ov.get('window_us'))}"
        " window (first step start to last GPU work end)",
        f"  steps                 {ov.get('steps', 0)}  (CPU span median "
        f"{fmt_us(ov.get('step_cpu_span_us_median'))}, GPU work median "
        f"{fmt_us(ov.get('step_gpu_work_us_median'))})",
        f"  GPU work items        {ov.get('kernels', 0)}  (launch calls in steps: "
        f"{ov.get('launches', 0)}; shorter than their launch call: {ov.get('short_kernels', 0)})",
    ]
    if ov.get("launch_latency_us_p50") is not None:
        lines.append(
            f"  launch -> start       p50 {fmt_us(ov.get('launch_latency_us_p50'))}, p90 "
            f"{fmt_us(ov.get('launch_latency_us_p90'))}, max "
            f"{fmt_us(ov.get('launch_latency_us_max'))} ({_pct(ov.get('launch_queued_pct'))} "
            "queued behind earlier GPU work)")
    if ov.get("kernels"):
        lines.append(
            f"  GPU idle in steps     {ov.get('idle_gaps', 0)} gap(s), "
            f"{fmt_us(ov.get('idle_gap_total_us'))} total, largest "
            f"{fmt_us(ov.get('idle_gap_max_us'))}")
    lines.append(
        f"  host syncs            {ov.get('host_syncs', 0)} ({fmt_us(ov.get('host_sync_us'))}); "
        f"inside steps: {ov.get('host_syncs_in_steps', 0)} "
        f"({fmt_us(ov.get('host_sync_in_steps_us'))})")
    start_ms = given(s.profiler_start_ms)
    if (start_ms or 0) > 100:  # ms: a stall worth a line
        lines += _wrap(f"profiler start: the call where the profiler started took "
                       f"{fmt_us(start_ms * 1e3)} longer (torch's trace setup; "
                       "outside the measured steps)", "  ")
    return lines


def _steps(steps: list[StepRow]) -> list[str]:
    if not steps:
        return ["  no ProfilerStep#N spans in this trace"]
    head = (f"  {'rank':>4} {'step':>5} {'CPU span':>11} {'self CPU':>11} {'GPU work':>11} "
            f"{'GPU busy':>11} {'GPU idle':>11} {'kernels':>8} {'launches':>9}")
    lines = [head]
    for st in steps:
        lines.append(
            f"  {st.rank:>4} {st.step:>5} {fmt_us(st.cpu_span_us):>11} "
            f"{fmt_us(st.self_cpu_us):>11} {fmt_us(st.gpu_work_us):>11} "
            f"{fmt_us(st.gpu_busy_us):>11} {fmt_us(st.gpu_idle_us):>11} "
            f"{st.kernels:>8} {st.launches:>9}")
    return lines


def _diagnostics(diags: list[Diagnostic]) -> list[str]:
    if not diags:
        return ["  no findings"]
    lines: list[str] = []
    for d in diags:
        lines += _wrap(f"[{d.severity}] {d.id}: {d.message}", "  ")
        lines += [f"      {op}{at_line(src)}" for op, src in evidence_sources(d.evidence).items()]
        if d.hint:
            lines += _wrap(f"hint: {d.hint}", "      ")
    return lines


def _short(name: str, width: int) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def _ops(rows: list[OpRow]) -> list[str]:
    if not rows:
        return ["  none"]
    head = (f"  {'name':<52} {'calls':>6} {'self CPU':>11} {'CPU total':>11} "
            f"{'self GPU':>11} {'GPU total':>11}")
    lines = [head]
    for r in rows:
        lines.append(
            f"  {_short(r.name, 52):<52} {r.calls:>6} {fmt_us(r.self_cpu_us):>11} "
            f"{fmt_us(r.cpu_total_us):>11} {fmt_us(r.self_device_us):>11} "
            f"{fmt_us(r.device_total_us):>11}")
        if given(r.source):
            lines.append(f"    {at_line(r.source, given(r.module)).strip()}")
    return lines


def _ranks(s: Report) -> list[str]:
    lines = [f"  {'rank':>4} {'step median':>12} {'collectives':>12} {'compute':>11} "
             f"{'GPU busy':>9}"]
    for r in s.ranks:
        mark = "  <- straggler" if r.rank == s.straggler_rank else ""
        lines.append(
            f"  {r.rank:>4} {fmt_us(given(r.step_time_us_median)):>12} "
            f"{fmt_us(given(r.collective_us_median)):>12} "
            f"{fmt_us(given(r.compute_us_median)):>11} "
            f"{_pct(given(r.gpu_busy_pct)):>9}{mark}")
    return lines


def _whatif(results: list[WhatIfResult], diags: list[Diagnostic]) -> list[str]:
    """One row per fix tried (autoprof.check(..., try_fixes=...)), then what the fixes each
    finding suggested measured (diagnostics first, then the verdict and opportunities)."""
    head = (f"  {'fix':<24} {'result':<17} {'speedup (95% CI)':<20} {'original -> fixed':<22} "
            f"{'outputs':<18} {'setup':>8}  break-even")
    lines = [head]
    for r in results:
        lines.append(f"  {_short(r.fix, 24):<24} {given(r.status) or '':<17} "
                     + (_whatif_numbers(r) if given(r.fixed_us) is not None else
                        str(given(r.reason) or "")))
        if both := same_inputs_note(r.to_dict()):
            lines += _wrap(f"{both}: {fmt_us(given(r.same_inputs_us))} per call", "      ")
        if given(r.settle):
            lines += _wrap(f"cannot tell: {r.settle}", "      ")
        if isinstance(error_pct := given(r.prediction_error_pct), int | float):
            same_pct = given(r.same_inputs_prediction_error_pct)
            lines.append(f"      replay predicted {given(r.predicted_speedup):.2f}x, "
                         f"{error_pct:+.0f}% off the measured speedup"
                         + (f": the prediction MISSED ({missed_because(r.to_dict())})"
                            if given(r.prediction_missed) else "")
                         + (f"; {same_pct:+.0f}% off the same-inputs one "
                            f"({given(r.same_inputs_speedup):.2f}x)"
                            if isinstance(same_pct, int | float) else ""))
        if given(r.fixed_verdict):
            lines += _wrap(f"profiled with the fix: {r.fixed_verdict} "
                           f"({given(r.fixed_verdict_reason) or ''})", "      ")
    ids = [d.id for d in diags]
    found = [f for r in results for f in given(r.suggested_by) or []]
    for finding in dict.fromkeys(sorted(found, key=lambda f: (f not in ids, found.index(f)))):
        for r in results:
            if finding in (given(r.suggested_by) or []):
                lines += _wrap(f"{finding}: suggests {r.fix}; measured: "
                               f"{whatif_outcome(r.to_dict())}", "  ")
    return lines


def _whatif_numbers(r: WhatIfResult) -> str:
    speedup = given(r.speedup) or given(r.measured_speedup)
    low, high = given(r.speedup_low), given(r.speedup_high)
    band = f" ({low:.2f}-{high:.2f})" if low is not None and high is not None else ""
    ratio = f"{speedup:.2f}x{band}" if speedup is not None else "n/a"
    times = f"{fmt_us(given(r.baseline_us))} -> {fmt_us(given(r.fixed_us))}"
    err = given(r.max_abs_error)
    match = given(r.outputs_match)
    outputs = ("not compared" if match is None else "match" if match else "DIFFER") + (
        f" ({err:.2g})" if isinstance(err, int | float) else "")
    setup = given(r.setup_s)
    setup_text = fmt_us(setup * 1e6) if isinstance(setup, int | float) else "n/a"
    calls = given(r.break_even_calls)
    return (f"{ratio:<20} {times:<22} {outputs:<18} {setup_text:>8}  "
            + (f"{calls:,} calls" if calls else "-"))


def _po_share(po: dict[str, Any]) -> str:
    """The profiler's share, only when its interval supports it (profiler_overhead.py)."""
    if po.get("overhead_told") is False:
        return str(po.get("overhead_note") or "the profiler's share cannot be told")
    low, high = po.get("overhead_pct_low"), po.get("overhead_pct_high")
    band = f", 95% {low:.0f}-{high:.0f}%" if isinstance(low, float) and isinstance(high, float) \
        else ""
    return f"{_pct(po['overhead_pct'])} of the call is the profiler's{band}"


def _num(key: str, value: Any) -> str:
    return fmt_pct(value) if key.endswith("pct") else fmt_value(key, value)


def _efficiency(e: dict[str, Any] | None, top: int = 8) -> list[str]:
    """The EFFICIENCY section: [] for a run without GPU work."""
    if not e or not e.get("kernels"):
        return []
    peak = e.get("peak") or {}
    roof = (peak.get("tflops") or {}).get(e.get("dtype") or "")
    roofs = [f"{e['dtype']} {_num('tflops', roof)} TFLOP/s"] if roof else []
    roofs += [f"{_num('gbps', peak['gbps'])} GB/s"] if peak.get("gbps") else []
    lines = ["", f"EFFICIENCY ({e.get('device') or 'unknown device'}; peak "
             f"{', '.join(roofs) or 'not known'})",
             f"  per step: {_num('tflops', e.get('step_tflops'))} TFLOP/s, MFU "
             f"{_num('mfu_pct', e.get('mfu_pct'))}; GPU time at >= 50% of its roofline: "
             f"{_num('pct', e.get('at_half_peak_pct'))}",
             f"  {'kernel':<44} {'calls':>5} {'GPU time':>9} {'TFLOP/s':>8} {'%peak':>7} "
             f"{'GB/s':>7} {'%peak':>7} {'FLOP/B':>7} bound"]
    for k in e["kernels"][:top]:
        lines.append(
            f"  {_short(str(k['name']), 44):<44} {k['calls']:>5} {fmt_us(k['gpu_us']):>9} "
            f"{_num('tflops', k['tflops']):>8} {_num('pct', k['pct_of_peak_flops']):>7} "
            f"{_num('gbps', k['gbps']):>7} {_num('pct', k['pct_of_peak_bw']):>7} "
            f"{_num('intensity', k['intensity']):>7} {k.get('bound') or 'n/a'}")
    far = ", ".join(f"{_short(str(k['name']), 40)} ({fmt_us(k['lost_us'])} lost)"
                    for k in (e.get("far_from_roofline") or [])[:3] if k.get("lost_us"))
    if far:
        lines += _wrap(f"farthest from the roofline (GPU time x (1 - efficiency)): {far}", "  ")
    for note in e.get("notes") or []:
        lines += _wrap(f"note: {note}", "  ")
    return lines


def _memory(mem: dict[str, Any] | None) -> list[str]:
    """MEMORY: peak per device, each step's start/peak/end, the regions that allocate most
    (a GPU run's CPU rows are left out below the device lines)."""
    if not mem:
        return []
    lines = ["", "MEMORY (profile_memory=True)"]
    devices = mem.get("devices") or []
    for d in devices:
        cap, pct = d.get("capacity_bytes"), d.get("reserved_pct")
        share = f" ({_pct(pct)} of {fmt_bytes(cap)})" if cap and pct is not None else ""
        at = f" in step {d['peak_step']}" if d.get("peak_step") is not None else ""
        lines.append(f"  {d['device']:<8} peak allocated {fmt_bytes(d['peak_allocated_bytes'])}"
                     f"{at}, peak reserved {fmt_bytes(d.get('peak_reserved_bytes'))}{share}; "
                     f"{d['allocations']} allocations")
    gpu = any(d["device"] != "cpu" for d in devices)
    steps = [r for r in mem.get("steps") or [] if not gpu or r["device"] != "cpu"]
    if steps:
        lines.append("  per step (allocated):")
    for r in steps[:12]:
        lines.append(f"    {r['device']:<8} step {r['step']:>4}: start "
                     f"{fmt_bytes(r['start_allocated_bytes'])}, peak {fmt_bytes(r['peak_bytes'])}"
                     f", end {fmt_bytes(r['end_allocated_bytes'])}, "
                     f"{r['allocations']} allocations")
    regions = [r for r in mem.get("by_region") or [] if not gpu or r["device"] != "cpu"]
    if regions:
        lines.append("  regions (allocated per step, largest first):")
    for r in regions[:8]:
        lines.append(f"    {_short(str(r['name']), 36):<36} {r['device']:<8} "
                     f"{fmt_bytes(r['allocated_bytes_per_step']):>10}, peak inside "
                     f"{fmt_bytes(r['peak_bytes'])}, {fmt_bytes(r['live_at_peak_bytes'])} "
                     "live at peak")
    return lines


MAX_STEP_BARS = 8


def _bucket_bar(pct: dict[str, Any]) -> str:
    """60 characters, one mark per bucket in proportion to its share."""
    return "".join(mark * round(0.6 * float(pct.get(b) or 0)) for b, mark in BUCKET_MARKS.items())


def untraced_between_clause(profiled_us: float | None, untraced_us: float | None) -> str:
    """What the time between calls takes without the profiler, as a clause to append to the
    between-calls line ("" when the run did not time it): the summary's
    `between_calls_untraced_us` against the profiled `between_calls_us`."""
    if untraced_us is None or profiled_us is None:
        return ""
    text = f"; without the profiler {fmt_us(untraced_us)} (the least between warm-up calls)"
    if profiled_us > 2.0 * untraced_us:
        text += (f": {fmt_us(profiled_us - untraced_us)} of it is the profiler's (its step "
                 "bookkeeping and its cost on the loop's ops), not the loop's")
    return text


def _between_calls(bd: Breakdown) -> list[str]:
    """One line: how much of each step passes between calls (the caller's loop, GPU idle),
    where, and autoprof's own time left out; nothing for a trace without calls."""
    us = given(bd.between_calls_us)
    if us is None:
        return []
    where = ", ".join(f"{w.name} {fmt_us(w.us_per_step)}"
                      for w in given(bd.between_calls_where) or [])
    return _wrap(f"between calls (the caller's loop, GPU idle): {fmt_us(us)} per step "
                 f"({_pct(given(bd.between_calls_pct))})" + (f", in {where}" if where else "")
                 + untraced_between_clause(us, given(bd.between_calls_untraced_us))
                 + f"; autoprof's own {fmt_us(given(bd.autoprof_us))} per step left out", "  ")


def _where_time_goes(s: Report) -> list[str]:
    """A bar of the seven buckets of a mean step, then the opportunities, largest first."""
    bd = s.breakdown
    pct = given(bd.buckets_pct) or {}
    if not given(bd.steps):
        return []
    lines = ["", f"WHERE THE TIME GOES (mean step {fmt_us(given(bd.step_us))})",
             f"  {'mean':>12} [{_bucket_bar(pct)}]"]
    for st in (given(bd.per_step) or [])[:MAX_STEP_BARS]:
        share = {b: 100 * float(v) / st["step_us"] if st["step_us"] else 0.0
                 for b, v in st["buckets_us"].items()}
        label = f"r{st['rank']} step {st['step']}"
        lines.append(f"  {label:>12} [{_bucket_bar(share)}] {fmt_us(st['step_us'])}")
    lines += _wrap("  ".join(f"{m} {b} {_pct(pct.get(b))}"
                             for b, m in BUCKET_MARKS.items() if pct.get(b)), "  ")
    lines += _between_calls(bd)
    for o in s.opportunities:
        where = ", ".join(f"{w.name} {fmt_us(w.us_per_step)}"
                          f"{at_line(given(w.source), given(w.module))}" for w in o.where)
        row = o.to_dict()  # speed.py reads the opportunity as every report does
        speed = speed_text(row)
        if given(o.ranked_by) == "max_speedup":
            speed += " (a bound only: no fix replayed)"
        elif predicted(row) and (p := given(o.predicted_spread)):
            speed = (f"{o.fix} predicted {speed_text(row, with_fix=False)}; "
                     f"{p['min']:.2f}-{p['max']:.2f}x over steps")
        lines += _wrap(f"{o.cause}: {fmt_us(o.us_per_step)} per step "
                       f"({_pct(o.pct_of_step)}), {speed}" + (f"; in {where}" if where else ""),
                       "  ")
        lines += _wrap(f"hint: {o.hint}", "      ")
    po = s.profiler_overhead or {}
    if po.get("available"):
        iteration = po.get("untraced_iteration_us")
        loop = (f"; an iteration of the loop without it, timed after the window, "
                f"{fmt_us(iteration)}" if iteration else "")
        lines += _wrap(f"profiler overhead: a profiled call takes {fmt_us(po['profiled_step_us'])}"
                       f", an untraced call {fmt_us(po['untraced_call_us'])} "
                       f"({_po_share(po)}){loop}", "  ")
    return lines


def _head(s: Report) -> list[str]:
    """The path, then the run in one line: name, ranks (and those without a trace), device,
    events and status."""
    ranks = f"{s.world_size or 1} rank(s)"
    missing = given(s.missing_ranks)
    if missing:  # never a world's size alone when ranks have no trace
        ranks += f", {len(missing)} missing ({', '.join(str(r) for r in missing)})"
    return [f"autoprof summary: {s.path}",
            f"run: {s.name} | {ranks} | {s.device_name()} | {s.events} events"
            + (f" | status {s.status}" if s.status else "")]


def safe_report(report: Report) -> Report:
    """``report`` with every string in it through units.safe_text (control characters escaped,
    very long names cut): what the text and Markdown reports print."""
    return Report.from_dict(safe_strings(report.to_dict()))


def render_summary(report: Report) -> str:
    """The text report of one run; every string in it printed through units.safe_text
    (``safe_report``)."""
    s = safe_report(report)
    lines = [
        *_head(s),
        "",
        f"VERDICT: {s.verdict}",
        *_wrap(s.verdict_reason, "  "),
        *_where_time_goes(s),
    ]
    if section := given(s.rank_by_rank):  # no events read: the reduce's sections instead
        return "\n".join([*lines, *rank_by_rank_lines(s, section)]) + "\n"
    lines += [
        "",
        "EVIDENCE",
        *_evidence(s),
        "",
        "STEPS (times per profiler step)",
        *_steps(s.steps),
        "",
        f"DIAGNOSTICS ({len(s.diagnostics)})",
        *_diagnostics(s.diagnostics),
    ]
    if s.whatif:
        lines += ["", "WHAT-IF (fixes measured on this function)",
                  *_whatif(s.whatif, s.diagnostics)]
    lines += _efficiency(s.efficiency)
    lines += _memory(s.memory)
    if len(s.ranks) > 1:
        lines += ["", "RANKS (medians per step)", *_ranks(s)]
    lines += ["", "TOP OPS BY SELF CPU TIME", *_ops(s.top_ops.by_self_cpu)]
    if s.top_ops.by_self_device:
        lines += ["", "TOP GPU WORK BY SELF GPU TIME", *_ops(s.top_ops.by_self_device)]
    return "\n".join(lines) + "\n"
