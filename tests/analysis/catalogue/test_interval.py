"""One number per fix: each predicted fix carries an interval that holds its estimate, and no
report shows an "up to" below it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from support.store import committed

from autoprof.analysis.diagnose.error_band import band_of
from autoprof.analysis.diagnose.predictions import predicted_interval, ranked
from autoprof.analysis.report.markdown import _opportunities as markdown_opportunities
from autoprof.analysis.report.model import Opportunity
from autoprof.analysis.report.speed import speed_text


def _graph(value: float, spread: tuple[float, float], bound: float) -> dict[str, Any]:
    return {"cause": "host_launch", "fix": "cuda-graph", "predicted_speedup": value,
            "predicted_spread": {"median": value, "q1": value, "q3": value,
                                 "min": spread[0], "max": spread[1]},
            "max_speedup": bound, "us_per_step": 10.0, "pct_of_step": 50.0, "where": [],
            "hint": "h"}


@pytest.mark.parametrize("value,spread", [(5.0, (4.9, 5.1)), (1.2, (0.9, 3.0)),
                                          (163.0, (150.0, 170.0))])
def test_the_interval_holds_the_estimate_and_the_spread(value: float,
                                                        spread: tuple[float, float]) -> None:
    band = predicted_interval(_graph(value, spread, 2.0))
    assert band["low"] < min(spread[0], value) and band["high"] > max(spread[1], value)
    # the spread widened by the family's model-error band either way, no more
    error = band_of("cuda-graph")
    assert band["low"] == pytest.approx(min(spread[0], value) * math.exp(-error.down_log))
    assert band["high"] == pytest.approx(max(spread[1], value) * math.exp(error.up_log))


def test_an_entry_s_own_stated_error_is_kept_where_it_is_wider() -> None:
    opp = {**_graph(2.0, (2.0, 2.0), 3.0), "fix": "set-num-threads", "prediction_error": 0.5}
    band = predicted_interval(opp)
    assert band["low"] <= 2.0 / 1.5 and band["high"] >= 2.0 / 0.5


def test_a_bound_below_the_estimate_is_never_shown_as_up_to() -> None:
    """The issue's decode loop: a graph predicted 163x beside "up to 14.1x"."""
    (opp,) = ranked([_graph(163.0, (150.0, 170.0), 14.1)])
    text = speed_text(opp)
    assert "up to" not in text and text.startswith("cuda-graph 163.00x (likely")
    low, high = (float(v.rstrip("x)")) for v in text.split("likely ")[1].split("-"))
    assert low <= 163.0 <= high
    # the text states the family's widened spread, the interval every report reads
    widened = band_of("cuda-graph").widen(163.0, 150.0, 170.0)
    assert (low, high) == (round(widened[0], 2), round(widened[1], 2))
    md = "\n".join(markdown_opportunities([Opportunity.from_dict(opp)]))
    assert "up to 14.10x" not in md and "163.00x" in md


def test_a_bound_alone_still_reads_up_to() -> None:
    (opp,) = ranked([{"cause": "host_untraced", "fix": None, "max_speedup": 1.5, "hint": "h"}])
    assert speed_text(opp) == "up to 1.50x"
    assert "predicted_interval" not in opp
    assert not math.isnan(opp["max_speedup"])


@pytest.mark.slow
def test_no_report_of_the_h100_catalogue_shows_a_bound_beside_or_below_an_estimate() -> None:
    """Every predicted fix of the nine H100 catalogue programs reads as one estimate with an
    interval that holds it, in the text and the Markdown report alike."""
    catalogue = Path(__file__).resolve().parents[2] / "data" / "gpu_h100_catalogue"
    truth = json.loads((catalogue / "catalogue_truth.json").read_text())["cases"]
    for about in truth.values():
        opps = committed.run(catalogue / about["record"]["run"]).analysis.opportunities
        md = "\n".join(markdown_opportunities([Opportunity.from_dict(o) for o in opps]))
        for o in opps:
            if o.get("ranked_by") != "predicted_speedup":
                continue
            band, value = o["predicted_interval"], float(o["predicted_speedup"])
            assert band["low"] <= value <= band["high"]
            assert "up to" not in speed_text(o)
            assert f"{value:.2f}x" in md
