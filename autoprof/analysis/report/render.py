"""``render(report, fmt)``: one run's report as text, Markdown or notebook HTML.

The one door to the three renderers (report/text.py, report/markdown.py, report/notebook.py);
each computes no statistic and reads only the report.
"""

from __future__ import annotations

from typing import Literal

from autoprof.analysis.report.markdown import render_markdown
from autoprof.analysis.report.model import Report
from autoprof.analysis.report.notebook import render_html
from autoprof.analysis.report.text import render_summary

Format = Literal["text", "markdown", "html"]
FORMATS: tuple[Format, ...] = ("text", "markdown", "html")


def render(report: Report, fmt: Format = "text") -> str:
    """``report`` in ``fmt``: ``text`` (``autoprof summary``), ``markdown``
    (``--format markdown``) or ``html`` (a notebook's ``Run._repr_html_``)."""
    if fmt == "markdown":
        return render_markdown(report)
    if fmt == "html":
        return render_html(report)
    if fmt == "text":
        return render_summary(report)
    raise ValueError(f"render: unknown format {fmt!r}; one of {', '.join(FORMATS)}")
