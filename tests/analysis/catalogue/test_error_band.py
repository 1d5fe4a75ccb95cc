"""The model-error bands: the committed table is the script's output on the committed
development pairs, every band holds its pairs at the stated level, and the held-out GPU
truths fall inside their intervals at least as often as docs/validation.md says."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from autoprof.analysis.diagnose.error_band import BANDS_FILE, band_of
from benchmarks.validation import error_band as script

REPO = Path(__file__).resolve().parents[3]
# docs/validation.md, "Programs written before their predictions were read": at least this
# share of the H100 set's pairs inside their stated interval (12 of 16, a bound the docs
# state, under the goal of 80% that is not met yet; two of its programs are development
# programs since their misses were read)
HELDOUT_INSIDE_AT_LEAST = 0.75


def test_the_committed_bands_are_the_scripts_output_on_the_committed_pairs() -> None:
    doc = json.loads(script.PAIRS_FILE.read_text())
    assert script.BANDS_FILE == BANDS_FILE
    assert script.bands(doc) == json.loads(BANDS_FILE.read_text())
    # the H200 pairs are the lab's committed as_shown table: regenerating it without the bands
    # fails here
    assert [p for p in doc["pairs"] if p["source"].startswith("gpu_h200")] == \
        script.as_shown_pairs()
    # development data only: of the held-out sets, those judged already (DEVELOPMENT_SETS),
    # each pair the same change as its estimate; a set not yet judged is no source
    judged = {p["source"].split("/")[0] for p in doc["pairs"]
              if p["source"].startswith(("gpu_h100_heldout", "cpu_heldout"))}
    assert judged <= set(script.DEVELOPMENT_SETS)
    assert [p for p in doc["pairs"] if p["source"].split("/")[0] in judged] == \
        script.development_set_pairs()


def test_each_band_holds_its_development_pairs_at_the_stated_level() -> None:
    doc = json.loads(script.PAIRS_FILE.read_text())
    table = json.loads(BANDS_FILE.read_text())
    inside = 0
    for p in doc["pairs"]:
        low, high = band_of(p["family"]).widen(p["predicted"], p["spread_min"], p["spread_max"])
        assert low <= p["predicted"] <= high
        inside += low <= p["measured"] <= high
    assert inside >= table["level"] * len(doc["pairs"])
    assert (inside, len(doc["pairs"])) == script.coverage(doc["pairs"], table)


def test_every_band_is_at_least_the_floor_and_an_unknown_family_takes_the_pooled_one() -> None:
    table = json.loads(BANDS_FILE.read_text())
    floor = table["floor_log"]
    assert floor > 0
    for family, row in table["families"].items():
        band = band_of(family)
        assert band.points == row["points"] > 0
        assert band.down_log >= floor and band.up_log >= floor
    unknown = band_of("no-such-fix")
    assert unknown.points == 0
    assert (unknown.down_log, unknown.up_log) == (table["pooled"]["down_log"],
                                                  table["pooled"]["up_log"])
    assert math.isclose(band_of(None).up_log, unknown.up_log)


@pytest.mark.slow
def test_heldout_gpu_truths_fall_inside_their_intervals_at_the_documented_rate(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The eight held-out H100 programs re-analysed from their committed runs: each pair's
    interval holds its estimate, and at least HELDOUT_INSIDE_AT_LEAST of the measured gains
    lie inside."""
    monkeypatch.syspath_prepend(str(REPO / "benchmarks" / "gpu"))
    import heldout_intervals

    rows = heldout_intervals.pairs(heldout_intervals.DEFAULT)
    assert len(rows) >= 10
    for r in rows:
        assert r["low"] <= r["predicted"] <= r["high"], r
    assert sum(r["inside"] for r in rows) >= HELDOUT_INSIDE_AT_LEAST * len(rows)
