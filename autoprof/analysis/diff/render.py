"""A diff as text (the terminal) and as GitHub-flavoured Markdown (a pull request, a CI job
summary)."""

from __future__ import annotations

from autoprof.analysis.diff.causes import Cause
from autoprof.analysis.diff.result import Diff
from autoprof.analysis.diff.significance import Change, noise_band
from autoprof.units import fmt_pct, fmt_us, safe_text

# what a row's percentage is: rows overlap (an op and its kernels) and move both ways, so they
# do not add to 100%; and which statistic each number is
SHARE_NOTE = ("  each row's change is against the step's change (rows overlap and move both "
              "ways: they need not add to 100%); rows and buckets are means per step, the step "
              "time its median")


def _signed_pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}%"


def _change_line(label: str, change: Change | None) -> str:
    if change is None:
        return f"{label}: n/a"
    if change.change_pct is None:
        return f"{label}: {change.verdict} ({change.reason})"
    return (f"{label}: {fmt_us(change.median_a)} -> {fmt_us(change.median_b)} "
            f"{_signed_pct(change.change_pct)} (95% CI {_signed_pct(change.ci_low_pct)} .. "
            f"{_signed_pct(change.ci_high_pct)}; {_runs(change.runs_a, change.samples_a)} vs "
            f"{_runs(change.runs_b, change.samples_b)}): {change.verdict}")


def _runs(runs: int, steps: int) -> str:
    return f"{steps} steps" if runs == 1 else f"{runs} runs, {steps} steps"


def _noise_line(change: Change | None) -> str | None:
    """What the interval counts as noise between runs, and the smallest change it can see."""
    if change is None or change.min_detectable_pct is None or change.between_run_pct is None:
        return None
    source = {"repeats": "measured from the repeats",
              "blocks": "from the spread of each run's thirds",
              "floor": "the floor assumed; record repeats to measure it"}[
        change.between_run_source]
    return (f"{noise_band(change.min_detectable_pct)} with these runs (between-run spread "
            f"{change.between_run_pct:.1f}%, {source})")


def _cause_line(c: Cause) -> str:
    share = "" if c.share_pct is None else f", {c.share_pct:.0f}% against the step's change"
    note = f"  [{c.note}]" if c.note else ""
    return (f"  {c.kind:<7} {c.name[:60]:<60} {fmt_us(c.a_us):>9} -> {fmt_us(c.b_us):>9} "
            f"({'+' if c.delta_us >= 0 else '-'}{fmt_us(abs(c.delta_us))}{share}){note}")


def _comparability_lines(d: Diff) -> list[str]:
    lines = [f"comparability: {d.comparability.status}"]
    lines += [f"  not comparable: {r}" for r in d.comparability.blocking]
    lines += [f"  caveat: {r}" for r in d.comparability.caveats]
    return lines


def _metric_value(name: str, value: float | None) -> str:
    if value is None:
        return "n/a"
    if name.endswith("_bytes"):
        return f"{value / 1e6:,.1f} MB"
    return fmt_pct(value) if name.endswith("_pct") else f"{value:,.4g}"


def _metric_lines(d: Diff) -> list[str]:
    return [f"  {m.name.removesuffix('_pct').removesuffix('_bytes').replace('_', ' ')}: "
            f"{_metric_value(m.name, m.a)} -> "
            f"{_metric_value(m.name, m.b)}"
            for m in d.metrics if m.a != m.b]


def _judged_note(d: Diff) -> str:
    """Where the verdict is on the GPU time per step, says so and why."""
    if d.judged_on != "gpu_time":
        return ""
    return (" (on the GPU time per step: the step time's change is within its noise, and the "
            "GPU's work bounds the step)")


def render_text(d: Diff) -> str:
    lines = [f"autoprof diff: {d.a} -> {d.b}", *_comparability_lines(d), "",
             f"VERDICT: {d.verdict}{_judged_note(d)}"]
    if d.step is not None:
        lines += ["  " + _change_line("step time", d.step)]
        noise = _noise_line(d.step)
        if noise:
            lines += ["  " + noise]
        if d.gpu is not None:
            lines += ["  " + _change_line("GPU time per step", d.gpu)]
        lines += ["  " + _change_line(f"rank {r.rank} step time", r.step) for r in d.ranks]
    lines += _metric_lines(d)
    if d.why or any(c.delta_us for c in d.buckets):
        lines += [SHARE_NOTE]
    for title, rows in (("WHY (ops, largest first)", d.why),
                        ("BUCKETS (mean per step)", [c for c in d.buckets if c.delta_us]),
                        ("KERNELS (per step)", d.kernels[:5])):
        if rows:
            lines += ["", title, *(_cause_line(c) for c in rows)]
    return _printable(lines)


def _printable(lines: list[str]) -> str:
    """The lines joined, each through units.safe_text: a name or path from a trace never
    reaches the terminal with its control characters, nor megabytes long."""
    return "\n".join(safe_text(line) for line in lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("`", "'").replace("\n", " ")


def _md_rows(rows: list[Cause]) -> list[str]:
    out = ["| | name | A | B | change | against step's change | note |",
           "|---|---|---:|---:|---:|---:|---|"]
    for c in rows:
        share = "" if c.share_pct is None else f"{c.share_pct:.0f}%"
        out.append(f"| {c.kind} | `{_md_escape(c.name[:80])}` | {fmt_us(c.a_us)} | "
                   f"{fmt_us(c.b_us)} | {'+' if c.delta_us >= 0 else '-'}"
                   f"{fmt_us(abs(c.delta_us))} | {share} | {_md_escape(c.note)} |")
    return out


def render_markdown(d: Diff) -> str:
    lines = [f"### autoprof diff: **{d.verdict}**{_judged_note(d)}", "",
             f"`{_md_escape(d.a)}` → `{_md_escape(d.b)}`", "",
             f"- comparability: **{d.comparability.status}**"]
    lines += [f"  - {_md_escape(r)}" for r in d.comparability.blocking + d.comparability.caveats]
    if d.step is not None:
        lines.append("- " + _md_escape(_change_line("step time", d.step)))
        noise = _noise_line(d.step)
        if noise:
            lines.append("- " + _md_escape(noise))
    if d.gpu is not None:
        lines.append("- " + _md_escape(_change_line("GPU time per step", d.gpu)))
    lines += ["- " + _md_escape(_change_line(f"rank {r.rank} step time", r.step))
              for r in d.ranks]
    if d.why:
        lines += ["", "**Why** (per step, largest first)", "", *_md_rows(d.why)]
    moved = [c for c in d.buckets if c.delta_us]
    if moved:
        lines += ["", "**Buckets** (mean per step)", "", *_md_rows(moved)]
    if d.why or moved:
        lines += ["", _md_escape(SHARE_NOTE.strip())]
    return _printable(lines)
