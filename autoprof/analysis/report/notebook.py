"""How a run shows itself in a notebook: ``Run._repr_html_`` and ``Run._repr_markdown_``.

The verdict and its reason, the breakdown of a mean step as one stacked bar (one colour per
bucket, each segment's share in its tooltip), the opportunities, the best fix what-if measured
and the diagnostics with their hints. Rendered from the typed report (report/model, the record
``autoprof summary --json`` prints); computes no statistic. Every text from the run is
HTML-escaped, so an op named ``<script>`` shows as text. Self-contained inline HTML: no
script, no stylesheet, no network.
"""

from __future__ import annotations

from html import escape
from typing import Any

from autoprof.analysis.kinds import (
    BUCKET_COLOURS,
    BUCKETS_SHOWN,
    NEUTRAL_COLOUR,
    SEVERITY_COLOURS,
    VERDICT_COLOURS,
)
from autoprof.analysis.report.markdown import fix_sentence, render_markdown
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.model.base import given
from autoprof.analysis.report.speed import speed_text
from autoprof.analysis.report.whatif_text import whatif_depends
from autoprof.units import fmt_pct, fmt_us


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _head(s: Report) -> str:
    colour = VERDICT_COLOURS.get(s.verdict, NEUTRAL_COLOUR)
    facts = s.head_facts()
    return (f'<div style="font-size:1.1em"><b>autoprof: {_e(s.name)}</b> '
            f'<span style="background:{colour};color:#fff;border-radius:3px;padding:1px 6px">'
            f'{_e(s.verdict)}</span></div>'
            f'<div style="color:#666">{_e(" · ".join(facts))}</div>'
            f'<p style="margin:4px 0">{_e(s.verdict_reason or "")}</p>')


def breakdown_bar(s: Report) -> str:
    """The mean step as one stacked bar plus its legend; '' without step buckets."""
    bd = s.breakdown
    pct, us = bd.buckets_pct or {}, bd.buckets_us or {}
    shown = [b for b in BUCKETS_SHOWN if float(pct.get(b) or 0) > 0]
    if not bd.steps or not shown:
        return ""
    segments = "".join(
        f'<div title="{_e(b)}: {_e(fmt_us(us.get(b)))} ({_e(fmt_pct(pct.get(b)))})" '
        f'style="width:{float(pct[b] or 0):.3f}%;background:{BUCKET_COLOURS[b]}"></div>'
        for b in shown)
    legend = " ".join(
        f'<span style="white-space:nowrap"><span style="display:inline-block;width:10px;'
        f'height:10px;background:{BUCKET_COLOURS[b]}"></span> '
        f'{_e(b)} {_e(fmt_pct(pct.get(b)))}</span>'
        for b in shown)
    return (f'<div style="margin-top:6px"><b>Where the time goes</b> (mean step '
            f'{_e(fmt_us(given(bd.step_us)))}, {bd.steps} steps)</div>'
            f'<div class="autoprof-bar" style="display:flex;height:16px;width:100%;'
            f'border-radius:3px;overflow:hidden;background:#eee">{segments}</div>'
            f'<div style="font-size:0.85em">{legend}</div>')


def _num(text: str) -> str:
    return f'<td style="white-space:nowrap;text-align:right">{_e(text)}</td>'


def _opportunities(s: Report) -> str:
    if not s.opportunities:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(o.cause)}</code></td>{_num(fmt_us(o.us_per_step))}"
        f"{_num(fmt_pct(o.pct_of_step))}{_num(speed_text(o.to_dict()))}"
        f"<td>{_e(', '.join(w.name for w in o.where[:3]))}</td>"
        f"<td>{_e(o.hint or '')}</td></tr>" for o in s.opportunities)
    return ('<div style="margin-top:6px"><b>Opportunities</b></div><table>'
            "<tr><th>cause</th><th>per step</th><th>share</th><th>predicted or at most</th>"
            f"<th>where</th><th>hint</th></tr>{rows}</table>")


def _fix(s: Report) -> str:
    fix = s.best_fix()
    depends = "".join(f"<p><b>Depends on your loop</b> (what-if): {_e(line)}</p>"
                      for line in whatif_depends([r.to_dict() for r in s.whatif]))
    if fix is None:
        return depends
    return f'<p><b>Best measured fix</b> (what-if): {_e(fix_sentence(fix))}</p>{depends}'


def _diagnostics(s: Report) -> str:
    if not s.diagnostics:
        return "<p><b>Diagnostics</b>: no findings</p>"
    items = "".join(
        f'<li><span style="color:{SEVERITY_COLOURS.get(d.severity, NEUTRAL_COLOUR)}">'
        f"[{_e(d.severity)}]</span> <code>{_e(d.id)}</code>: {_e(d.message)}"
        + (f"<br><i>hint:</i> {_e(d.hint)}" if d.hint else "") + "</li>"
        for d in s.diagnostics)
    return f"<div><b>Diagnostics</b> ({len(s.diagnostics)})</div><ul>{items}</ul>"


def render_html(report: Report) -> str:
    """One run's report as a self-contained HTML block (``Run._repr_html_``)."""
    body = (_head(report) + breakdown_bar(report) + _opportunities(report) + _fix(report)
            + _diagnostics(report))
    return f'<div class="autoprof-run" style="max-width:72em">{body}</div>'


def run_html(run: Any) -> str:
    """``Run._repr_html_``: the run's summary as HTML."""
    return render_html(run.report())


def run_markdown(run: Any) -> str:
    """``Run._repr_markdown_``: the run's summary as the Markdown of ``--format markdown``."""
    return render_markdown(run.report())
