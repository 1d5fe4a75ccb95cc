"""autoprof's advice on each held-out program beside the fixes measured by hand.

Reads ``OUT/truth.json`` (written by ``heldout_driver.measure``) and each recorded run's
summary. autoprof's advice is its ranked opportunities, then the findings that carry a hint,
in that order. A fix counts as *offered* when some piece of advice is it (the fix named by
the case's first ``match`` word) or names it (one of the ``match`` words, lower case, in the
advice's text); *first* when the first piece does.
Where the advice is an opportunity with a prediction, the measured gain is held against its
estimate and interval. Writes ``OUT/compare.json`` and ``OUT/compare.md``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from heldout_driver import best_fix


def advice(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary's advice in order: opportunities, then findings with a hint."""
    items: list[dict[str, Any]] = []
    for o in summary.get("opportunities") or []:
        text = " ".join(str(o.get(k) or "") for k in ("cause", "fix", "hint"))
        items.append({"kind": "opportunity", "name": o.get("fix") or o.get("cause"),
                      "text": text.lower(), "predicted": o.get("predicted_speedup"),
                      "interval": o.get("predicted_interval"),
                      "max_speedup": o.get("max_speedup")})
    for d in summary.get("diagnostics") or []:
        if d.get("hint"):
            text = " ".join(str(d.get(k) or "") for k in ("id", "message", "hint"))
            items.append({"kind": "finding", "name": d.get("id"), "text": text.lower(),
                          "predicted": None, "interval": None, "max_speedup": None})
    return items


def _rank(items: list[dict[str, Any]], words: list[str]) -> int | None:
    """The first item that is the fix named by `words`' first word (the catalogue's name for
    it), else the first whose text holds any of `words` (a finding's hint, or a fix named
    another way): another fix's hint that mentions this one (a CUDA graph's "or vectorise the
    Python loop") is not this fix's prediction."""
    named = next((i for i, item in enumerate(items) if item["name"] == words[0]), None)
    if named is not None:
        return named
    for i, item in enumerate(items):
        if any(w.lower() in item["text"] for w in words):
            return i
    return None


def judge_fix(items: list[dict[str, Any]], fix: dict[str, Any]) -> dict[str, Any]:
    """Is this fix offered, at which rank, and is its measured gain in the stated interval?"""
    rank = _rank(items, fix["match"])
    row: dict[str, Any] = {"measured": fix.get("speedup"), "offered": rank is not None,
                           "rank": None if rank is None else rank + 1}
    if rank is None:
        return row
    item = items[rank]
    row |= {"advice": item["name"], "predicted": item["predicted"],
            "interval": item["interval"], "max_speedup": item["max_speedup"]}
    measured, band = fix.get("speedup"), item["interval"]
    if measured and item["predicted"]:
        row["error"] = round(float(item["predicted"]) / measured - 1.0, 4)
    if measured and isinstance(band, dict):
        row["in_interval"] = float(band["low"]) <= measured <= float(band["high"])
    return row


def judge_case(entry: dict[str, Any], summary: dict[str, Any] | None) -> dict[str, Any]:
    items = advice(summary or {})
    first = items[0] if items else None
    fixes = {label: judge_fix(items, fix) for label, fix in entry["fixes"].items()}
    best = entry.get("best_fix")
    keys = ("kind", "name", "predicted", "interval", "max_speedup")
    return {"best_fix": best, "fixes": fixes,
            "first_advice": None if first is None else {k: first[k] for k in keys},
            "advice_top5": [{k: item[k] for k in keys} for item in items[:5]],
            "best_offered": bool(best and fixes[best]["offered"]),
            "best_first": bool(best and fixes[best]["rank"] == 1),
            "recorded": summary is not None}


def _summary(out: Path, entry: dict[str, Any]) -> dict[str, Any] | None:
    import autoprof

    run_rel = (entry.get("record") or {}).get("run")
    if not run_rel:
        return None
    summary: dict[str, Any] = autoprof.load(out / run_rel).summary()
    return summary


def _x(value: Any) -> str:
    return f"{float(value):.2f}x" if isinstance(value, int | float) else "-"


def _band(row: dict[str, Any]) -> str:
    band = row.get("interval")
    if isinstance(band, dict):
        return f"{_x(row.get('predicted'))} ({_x(band['low'])}-{_x(band['high'])})"
    if row.get("max_speedup"):
        return f"up to {_x(row['max_speedup'])}"
    return "-"


def table(truth: dict[str, Any], rows: dict[str, Any]) -> str:
    """One Markdown row per (case, fix): measured gain and spread beside the advice."""
    lines = ["| program | fix by hand | measured (min-max) | offered (rank) | autoprof's "
             "estimate (interval) | in interval | autoprof's first advice |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, row in rows.items():
        first = row["first_advice"] or {}
        for label, fix in row["fixes"].items():
            t = truth["cases"][name]["fixes"][label]
            best = " (best)" if label == row["best_fix"] else ""
            best += " (after advice)" if t.get("after_advice") else ""
            offered = f"yes ({fix['rank']})" if fix["offered"] else "no"
            inside = {True: "yes", False: "no"}.get(fix.get("in_interval"), "-")
            lines.append(
                f"| {name} | {label}{best} | {_x(t.get('speedup'))} ({_x(t.get('speedup_min'))}"
                f"-{_x(t.get('speedup_max'))}) | {offered} | {_band(fix)} | {inside} | "
                f"{first.get('name', 'none') if row['recorded'] else 'not recorded'} "
                f"{_band(first) if first else ''} |")
    return "\n".join(lines)


def with_advice_fixes(truth: dict[str, Any], added: dict[str, Any]) -> dict[str, Any]:
    """``truth`` with the fixes of ``added`` (``heldout_advice_fixes.py``'s truth: fixes written
    after autoprof's advice was read, each timed against the program in its own rounds) put
    beside each case's own, marked ``after_advice``; the best fix is chosen again over all."""
    merged = copy.deepcopy(truth)
    for name, entry in added["cases"].items():
        case = merged["cases"].get(name)
        if case is None:
            continue
        for label, fix in entry["fixes"].items():
            case["fixes"][label] = {**fix, "after_advice": True}
        case["best_fix"] = best_fix(case["fixes"])
    return merged


def compare(out_dir: str) -> dict[str, Any]:
    """Judge every case of ``OUT/truth.json`` (with ``OUT/advice_truth.json``'s fixes where
    that file is there); writes compare.json and compare.md."""
    out = Path(out_dir)
    truth = json.loads((out / "truth.json").read_text())
    if (out / "advice_truth.json").is_file():
        truth = with_advice_fixes(truth, json.loads((out / "advice_truth.json").read_text()))
    rows = {name: judge_case(entry, _summary(out, entry))
            for name, entry in truth["cases"].items()}
    judged = [r for r in rows.values() if r["best_fix"]]
    totals = {"programs": len(judged),
              "best_offered": sum(r["best_offered"] for r in judged),
              "best_first": sum(r["best_first"] for r in judged)}
    (out / "compare.json").write_text(json.dumps({"totals": totals, "cases": rows}, indent=1,
                                                 default=str))
    text = (table(truth, rows) + f"\n\nbest fix offered in {totals['best_offered']} of "
            f"{totals['programs']}, ranked first in {totals['best_first']} of "
            f"{totals['programs']}\n")
    (out / "compare.md").write_text(text)
    print(text)
    return {"totals": totals, "cases": rows}
