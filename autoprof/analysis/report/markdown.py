"""`autoprof summary --format markdown`: the summary as compact GitHub-flavoured Markdown.

For a pull request, an issue or a prompt: the verdict and its reason, where a mean step's time
goes, the straggler and slowest ranks of a run analysed rank by rank, the opportunities, the
best fix what-if measured, the diagnostics with their hints and the top ops, each number with
its unit (autoprof.units). Rendered from the typed report (report/model), the record `--json`
prints; computes no statistic. Names (ops, buckets, findings) are code spans and prose is
escaped, so a name such as ``a|b`` or ``<script>`` stays text, in a table too.
"""

from __future__ import annotations

import re

from autoprof.analysis.kinds import BUCKETS_SHOWN
from autoprof.analysis.report.model import FolderSummary, Opportunity, Report, WhatIfResult
from autoprof.analysis.report.model.base import given
from autoprof.analysis.report.speed import speed_text
from autoprof.analysis.report.text import safe_report, untraced_between_clause
from autoprof.analysis.report.whatif_text import whatif_depends
from autoprof.units import fmt_pct, fmt_us, safe_strings

TOP_OPS = 5
_SEVERITY_MARK = {"critical": "🔴", "warning": "🟠", "info": "🔵"}
NAME_WIDTH = 60  # op and kernel names are cut to this in tables (C++ templates run long)
_PROSE = re.compile(r"[\\`*\[\]<|]|&(?=[A-Za-z#])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|[\r\n]")


def md(text: object) -> str:
    """``text`` as Markdown prose that shows exactly these characters: no markup, no HTML,
    no table cell break (intraword underscores, as in ``host_launch``, need no escape)."""
    return _PROSE.sub(_escape, str(text))


def _escape(match: re.Match[str]) -> str:
    c = match.group(0)
    return {"<": "&lt;", "&": "&amp;", "\r": " ", "\n": " "}.get(c, "\\" + c)


def code(text: object, width: int | None = None) -> str:
    """``text`` as an inline code span, safe in a table cell (a backtick becomes a quote, a
    pipe is escaped as GFM tables need); cut to ``width`` characters when given."""
    text = " ".join(str(text).replace("`", "'").split())
    if width is not None and len(text) > width:
        text = text[: width - 1] + "…"
    return "`" + text.replace("|", "\\|") + "`"


def fix_sentence(fix: WhatIfResult) -> str:
    """``compile: 1.43x faster (2.49 ms → 1.74 ms per call), outputs match``, plain text."""
    outputs = {True: "outputs match", None: "outputs not compared"}.get(
        given(fix.outputs_match), "outputs differ")
    base, fixed = given(fix.baseline_us), given(fix.fixed_us)
    times = (f" ({fmt_us(base)} → {fmt_us(fixed)} per call)"
             if base is not None and fixed is not None else "")
    same = given(fix.same_inputs_speedup)
    loop = (f" with each call's inputs copied in, {float(same):.2f}x when the loop passes the "
            "same tensors each call" if same is not None else "")
    return f"{fix.fix}: {float(given(fix.speedup) or 0):.2f}x faster{times}{loop}, {outputs}"


def _head(s: Report) -> list[str]:
    run, *rest = s.head_facts()
    facts = [code(run), *(md(fact) for fact in rest)]
    return [f"### autoprof: {code(s.name or s.path)} is **{md(s.verdict)}**",
            "", " · ".join(facts), "", f"> {md(s.verdict_reason or '')}"]


def _breakdown(s: Report) -> list[str]:
    bd = s.breakdown
    us, pct = bd.buckets_us or {}, bd.buckets_pct or {}
    rows = [b for b in BUCKETS_SHOWN if pct.get(b)]
    if not bd.steps or not rows:
        return []
    lines = ["", f"**Where the time goes** (mean of {bd.steps} steps: "
                 f"{fmt_us(given(bd.step_us))})", "", "| bucket | per step | share |",
             "| --- | ---: | ---: |"]
    for b in sorted(rows, key=lambda b: -float(pct[b] or 0)):
        lines.append(f"| {code(b)} | {fmt_us(us.get(b))} | {fmt_pct(pct.get(b))} |")
    between = given(bd.between_calls_us)
    if between is not None:
        where = ", ".join(f"{code(w.name, NAME_WIDTH)} {fmt_us(w.us_per_step)}"
                          for w in (bd.between_calls_where or [])[:3])
        lines += ["", f"Between calls (the caller's loop, GPU idle): "
                      f"{fmt_us(between)} per step "
                      f"({fmt_pct(given(bd.between_calls_pct))})"
                      + (f", in {where}" if where else "")
                      + untraced_between_clause(between,
                                                given(bd.between_calls_untraced_us)) + "."]
    return lines


def _opportunities(found: list[Opportunity]) -> list[str]:
    if not found:
        return []
    lines = ["", "**Opportunities** (largest first)", "",
             "| cause | per step | share | predicted or at most | where | hint |",
             "| --- | ---: | ---: | ---: | --- | --- |"]
    for o in found:
        where = ", ".join(f"{code(w.name, NAME_WIDTH)} {fmt_us(w.us_per_step)}"
                          for w in o.where[:3])
        speed = speed_text(o.to_dict())
        lines.append(f"| {code(o.cause)} | {fmt_us(o.us_per_step)} | "
                     f"{fmt_pct(o.pct_of_step)} | {speed} | {where or '-'} | "
                     f"{md(o.hint or '')} |")
    return lines


def _whatif(s: Report) -> list[str]:
    fix = s.best_fix()
    depends = [f"**Depends on your loop** (what-if): {md(line)}"
               for line in whatif_depends([r.to_dict() for r in s.whatif])]
    if fix is not None:
        head = f"**Best measured fix** (what-if): {md(fix_sentence(fix))}"
    elif s.whatif:
        head = (f"**What-if**: {len(s.whatif)} fix(es) tried, none measured faster"
                + (" with each call's inputs copied in" if depends else ""))
    else:
        return []
    return ["", head, *(line for d in depends for line in ("", d))]


def _diagnostics(s: Report) -> list[str]:
    if not s.diagnostics:
        return ["", "**Diagnostics**: no findings"]
    lines = ["", f"**Diagnostics** ({len(s.diagnostics)})", ""]
    for d in s.diagnostics:
        mark = _SEVERITY_MARK.get(d.severity, "⚪")
        hint = f" *Hint:* {md(d.hint)}" if d.hint else ""
        lines.append(f"- {mark} {code(d.id)} ({md(d.severity)}): {md(d.message)}{hint}")
    return lines


def _top_ops(s: Report, n: int = TOP_OPS) -> list[str]:
    lines: list[str] = []
    for rows, title in ((s.top_ops.by_self_cpu, "Top ops by self CPU time"),
                        (s.top_ops.by_self_device, "Top GPU work by self GPU time")):
        if not rows:
            continue
        lines += ["", f"**{title}**", "", "| op | calls | self CPU | CPU total | self GPU |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        lines += [f"| {code(r.name, NAME_WIDTH)} | {r.calls:,} | "
                  f"{fmt_us(r.self_cpu_us)} | {fmt_us(r.cpu_total_us)} | "
                  f"{fmt_us(r.self_device_us)} |" for r in rows[:n]]
    return lines


def _rank_by_rank(s: Report) -> list[str]:
    """A run analysed rank by rank (``Report.rank_by_rank``): the straggler and the slowest
    ranks, never a row per rank."""
    section = given(s.rank_by_rank)
    if section is None:
        return []
    straggler = ("no straggler" if s.straggler_rank is None
                 else f"straggler: rank {s.straggler_rank} (the others wait for it)")
    lines = ["", f"**Ranks analysed one by one**: {section.ranks_analysed} of {s.world_size}; "
                 f"{straggler}", "",
             "| rank | median step | compute | exposed comm | z | verdict |",
             "| ---: | ---: | ---: | ---: | ---: | --- |"]
    lines += [f"| {w.rank} | {fmt_us(w.step_time_us_median)} | {fmt_us(w.compute_us_median)} "
              f"| {fmt_pct(w.exposed_comm_pct)} | {'inf' if w.z is None else f'{w.z:.1f}'} "
              f"| {code(w.verdict)} |" for w in section.worst_ranks]
    return lines


def render_markdown(report: Report) -> str:
    """The Markdown report of one run; every string in it through units.safe_text (control
    characters escaped, long names cut: text.safe_report)."""
    s = safe_report(report)
    lines = [*_head(s), *_breakdown(s), *_rank_by_rank(s), *_opportunities(s.opportunities),
             *_whatif(s), *_diagnostics(s), *_top_ops(s)]
    return "\n".join(lines) + "\n"


def render_runs_markdown(listing: FolderSummary) -> str:
    """A folder of runs (what ``autoprof summary --json FOLDER`` prints): one table row per
    run; every string through units.safe_text."""
    listing = FolderSummary.from_dict(safe_strings(listing.to_dict()))
    lines = [f"### autoprof: {len(listing.runs)} runs under {code(listing.path)}", "",
             "| run | verdict | GPU busy | self CPU | self GPU |",
             "| --- | --- | ---: | ---: | ---: |"]
    for r in listing.runs:
        if r.error:
            lines.append(f"| {code(r.path)} | error: {md(r.error)} | | | |")
            continue
        lines.append(f"| {code(r.path)} | {md(given(r.verdict))} | "
                     f"{fmt_pct(given(r.gpu_busy_pct))} | {fmt_us(given(r.self_cpu_us))} | "
                     f"{fmt_us(given(r.self_gpu_us))} |")
    return "\n".join(lines) + "\n"
