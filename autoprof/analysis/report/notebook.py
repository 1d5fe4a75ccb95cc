"""How a run shows itself in a notebook: ``Run._repr_html_`` and ``Run._repr_markdown_``.

The verdict and its reason, the breakdown of a mean step as one stacked bar (one colour per
bucket, each segment's share in its tooltip), the opportunities, the best fix what-if measured
and the diagnostics with their hints. Rendered from the summary dict (``Run.summary()``, the
same one ``autoprof summary --json`` prints); computes no statistic. Every text from the run is
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
from autoprof.analysis.loader.whatif import best_fix
from autoprof.analysis.report.markdown import fix_sentence, render_markdown
from autoprof.analysis.report.model import WhatIfResult
from autoprof.analysis.report.speed import speed_text
from autoprof.units import fmt_pct, fmt_us


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _head(s: dict[str, Any]) -> str:
    verdict = str(s.get("verdict"))
    colour = VERDICT_COLOURS.get(verdict, NEUTRAL_COLOUR)
    device = s.get("device")
    if isinstance(device, dict):
        device = device.get("name")
    ranks = s.get("world_size") or 1
    facts = [str(s.get("run_id") or s.get("path")), f"{ranks} rank{'s' * (ranks > 1)}",
             str(device or "CPU"), f"{s.get('events', 0):,} events"]
    if s.get("status"):
        facts.append(f"status {s['status']}")
    return (f'<div style="font-size:1.1em"><b>autoprof: {_e(s.get("name"))}</b> '
            f'<span style="background:{colour};color:#fff;border-radius:3px;padding:1px 6px">'
            f'{_e(verdict)}</span></div>'
            f'<div style="color:#666">{_e(" · ".join(facts))}</div>'
            f'<p style="margin:4px 0">{_e(s.get("verdict_reason") or "")}</p>')


def breakdown_bar(s: dict[str, Any]) -> str:
    """The mean step as one stacked bar plus its legend; '' without step buckets."""
    bd = s.get("breakdown") or {}
    pct, us = bd.get("buckets_pct") or {}, bd.get("buckets_us") or {}
    shown = [b for b in BUCKETS_SHOWN if float(pct.get(b) or 0) > 0]
    if not bd.get("steps") or not shown:
        return ""
    segments = "".join(
        f'<div title="{_e(b)}: {_e(fmt_us(us.get(b)))} ({_e(fmt_pct(pct.get(b)))})" '
        f'style="width:{float(pct[b]):.3f}%;background:{BUCKET_COLOURS[b]}"></div>' for b in shown)
    legend = " ".join(
        f'<span style="white-space:nowrap"><span style="display:inline-block;width:10px;'
        f'height:10px;background:{BUCKET_COLOURS[b]}"></span> '
        f'{_e(b)} {_e(fmt_pct(pct.get(b)))}</span>'
        for b in shown)
    return (f'<div style="margin-top:6px"><b>Where the time goes</b> (mean step '
            f'{_e(fmt_us(bd.get("step_us")))}, {bd["steps"]} steps)</div>'
            f'<div class="autoprof-bar" style="display:flex;height:16px;width:100%;'
            f'border-radius:3px;overflow:hidden;background:#eee">{segments}</div>'
            f'<div style="font-size:0.85em">{legend}</div>')


def _num(text: str) -> str:
    return f'<td style="white-space:nowrap;text-align:right">{_e(text)}</td>'


def _where(opportunity: dict[str, Any]) -> str:
    return ", ".join(str(w["name"]) for w in opportunity["where"][:3])


def _speed(opportunity: dict[str, Any]) -> str:
    return speed_text(opportunity)


def _opportunities(s: dict[str, Any]) -> str:
    found = s.get("opportunities") or []
    if not found:
        return ""
    rows = "".join(
        f"<tr><td><code>{_e(o['cause'])}</code></td>{_num(fmt_us(o['us_per_step']))}"
        f"{_num(fmt_pct(o['pct_of_step']))}{_num(_speed(o))}<td>{_e(_where(o))}</td>"
        f"<td>{_e(o.get('hint') or '')}</td></tr>" for o in found)
    return ('<div style="margin-top:6px"><b>Opportunities</b></div><table>'
            "<tr><th>cause</th><th>per step</th><th>share</th><th>predicted or at most</th>"
            f"<th>where</th><th>hint</th></tr>{rows}</table>")


def _fix(s: dict[str, Any]) -> str:
    fix = best_fix(s.get("whatif") or [])
    if fix is None:
        return ""
    sentence = fix_sentence(WhatIfResult.from_dict(fix, where="whatif"))
    return f'<p><b>Best measured fix</b> (what-if): {_e(sentence)}</p>'


def _diagnostics(s: dict[str, Any]) -> str:
    diags = s.get("diagnostics") or []
    if not diags:
        return "<p><b>Diagnostics</b>: no findings</p>"
    items = "".join(
        f'<li><span style="color:{SEVERITY_COLOURS.get(str(d.get("severity")), NEUTRAL_COLOUR)}">'
        f"[{_e(d.get('severity'))}]</span> <code>{_e(d.get('id'))}</code>: "
        f"{_e(d.get('message'))}"
        + (f"<br><i>hint:</i> {_e(d['hint'])}" if d.get("hint") else "") + "</li>"
        for d in diags)
    return f"<div><b>Diagnostics</b> ({len(diags)})</div><ul>{items}</ul>"


def render_html(summary: dict[str, Any]) -> str:
    """One run's summary as a self-contained HTML block (``Run._repr_html_``)."""
    body = (_head(summary) + breakdown_bar(summary) + _opportunities(summary) + _fix(summary)
            + _diagnostics(summary))
    return f'<div class="autoprof-run" style="max-width:72em">{body}</div>'


def run_html(run: Any) -> str:
    """``Run._repr_html_``: the run's summary as HTML."""
    return render_html(run.summary())


def run_markdown(run: Any) -> str:
    """``Run._repr_markdown_``: the run's summary as the Markdown of ``--format markdown``."""
    return render_markdown(run.summary())
