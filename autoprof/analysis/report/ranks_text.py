"""The text sections of a run analysed rank by rank (``Report.rank_by_rank``): the
straggler, the ranks' spread, the slowest ranks and outliers, the ranks' verdicts and load
warnings. ``render_summary`` (report/text.py) puts them after the verdict and the breakdown in
place of the sections that need the events; never a row per rank (``--json`` keeps them)."""

from __future__ import annotations

from autoprof.analysis.metrics.ranks import ORDER_TEXT
from autoprof.analysis.report.model import RankByRank, Report, Spread
from autoprof.units import fmt_us

MAX_OUTLIERS = 20
MAX_WARNINGS = 10


def _ms(value_us: float | None) -> str:
    return "n/a" if value_us is None else fmt_us(value_us)


def _spread_line(label: str, spread: Spread | None, unit: str) -> str:
    def show(v: float | None) -> str:
        if v is None:
            return "n/a"
        return _ms(v) if unit == "us" else f"{v:.1f}%"

    if spread is None:
        return f"  {label:<22} n/a"
    return (f"  {label:<22} median {show(spread.median)}, MAD {show(spread.mad)}, "
            f"min {show(spread.min)}, p90 {show(spread.p90)}, max {show(spread.max)}")


def _worst(section: RankByRank) -> list[str]:
    lines = ["", f"SLOWEST RANKS, {ORDER_TEXT.get(section.worst_by, section.worst_by)}",
             "  (the straggler's rule; z: the median step's distance from the ranks' median "
             "in MADs)"]
    for w in section.worst_ranks:
        z = "inf" if w.z is None else f"{w.z:6.1f}"
        exposed = "n/a" if w.exposed_comm_pct is None else f"{w.exposed_comm_pct:5.1f}%"
        lines.append(f"  rank {w.rank:>5}  step {_ms(w.step_time_us_median):>9}  "
                     f"compute {_ms(w.compute_us_median):>9}  "
                     f"exposed comm {exposed}  z {z:>6}  {w.verdict}")
    outliers = section.outliers
    shown = ", ".join(map(str, outliers[:MAX_OUTLIERS])) + (
        " ..." if len(outliers) > MAX_OUTLIERS else "")
    lines.append(f"  outliers (|z| > 3.5): {shown or 'none'}")
    return lines


def rank_by_rank_lines(s: Report, section: RankByRank) -> list[str]:
    """The sections of a run analysed rank by rank (module doc)."""
    if s.straggler_rank is None:
        straggler = "STRAGGLER: none (the ranks are balanced, or never meet in collectives)"
    else:
        straggler = f"STRAGGLER: rank {s.straggler_rank} (the others wait for it)"
    lines = ["", f"RANKS ANALYSED ONE BY ONE: {section.ranks_analysed} of {s.world_size}",
             straggler, "", "RANKS' SPREAD",
             _spread_line("median step time", section.spread.get("step_time_us_median"), "us"),
             _spread_line("exposed communication", section.spread.get("exposed_comm_pct"),
                          "pct"),
             *_worst(section),
             "", "VERDICTS: " + ", ".join(f"{k} {v}" for k, v in
                                          sorted(section.verdicts.items()))]
    if section.warnings:
        lines += ["", f"WARNINGS ({len(section.warnings)})",
                  *section.warnings[:MAX_WARNINGS]]
    return lines
