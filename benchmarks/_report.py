"""One row per target (ours vs baseline, ratio, limit, verdict), the table, the machine."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from _measure import Stats

Measured = tuple[Stats | None, str | None]  # the numbers, or why there are none


@dataclass
class Row:
    target: str
    unit: str
    ours: Stats | None
    baseline: Stats | None
    ratio: float | None  # ours median / baseline median
    limit_text: str
    passed: bool | None  # None: not measured
    note: str = ""
    baseline_name: str = ""

    @classmethod
    def compare(cls, target: str, ours: Measured, base: Measured, limit: float | None,
              unit: str, higher_is_better: bool = False) -> Row:
        """Pass when ours/baseline is <= limit (or >= limit when higher is better)."""
        o, why_o = ours
        b, why_b = base
        ratio = o.median / b.median if o and b and b.median else None
        passed: bool | None = None
        if ratio is not None and limit is not None:
            passed = ratio >= limit if higher_is_better else ratio <= limit
        sign = ">=" if higher_is_better else "<="
        limit_text = "" if limit is None else f"ratio {sign} {limit:.3g}"
        return cls(target, unit, o, b, ratio, limit_text, passed,
                   note="; ".join(w for w in (why_o, why_b) if w))

    @classmethod
    def bounded(cls, target: str, ours: Measured, base: Measured, max_ours: float | None,
                 unit: str, baseline_name: str = "") -> Row:
        """Pass when ours' median is at most ``max_ours`` (the baseline is for reference)."""
        o, why_o = ours
        b, why_b = base
        ratio = o.median / b.median if o and b and b.median else None
        passed = None if o is None or max_ours is None else o.median <= max_ours
        limit_text = "" if max_ours is None else f"ours <= {max_ours:g} {unit}"
        return cls(target, unit, o, b, ratio, limit_text, passed,
                   note="; ".join(w for w in (why_o, why_b) if w),
                   baseline_name=baseline_name)

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target, "unit": self.unit,
            "ours": self.ours.as_dict() if self.ours else None,
            "baseline": self.baseline.as_dict() if self.baseline else None,
            "baseline_name": self.baseline_name,
            "ratio": self.ratio, "limit": self.limit_text,
            "pass": self.passed, "note": self.note,
        }


def _num(x: float) -> str:
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def _fmt(stats: Stats | None) -> str:
    if stats is None:
        return "n/a"
    text = _num(stats.median)
    return f"{text} [{_num(stats.min)}-{_num(stats.max)}]" if stats.n > 1 else text


def format_table(rows: list[Row]) -> str:
    head = ("target", "ours (median [min-max])", "baseline", "ratio", "limit", "result")
    body = []
    for r in rows:
        verdict = {True: "PASS", False: "FAIL", None: "n/a"}[r.passed]
        ratio = f"{r.ratio:.3f}" if r.ratio is not None else "n/a"
        body.append((r.target, _fmt(r.ours), _fmt(r.baseline), ratio, r.limit_text, verdict))
    widths = [max(len(str(x[i])) for x in [head, *body]) for i in range(len(head))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(head, widths, strict=True))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(b, widths, strict=True)) for b in body]
    notes = [f"  {r.target}: {r.note}" for r in rows if r.note]
    if notes:
        lines += ["", "notes:", *notes]
    return "\n".join(lines)


def print_table(rows: list[Row]) -> None:
    print(format_table(rows))


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_info(hta_python: Path) -> dict[str, Any]:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        mem_kb = 0
    hta_version = None
    if hta_python.exists():
        out = subprocess.run(
            [str(hta_python), "-c",
             "from importlib.metadata import version; print(version('HolisticTraceAnalysis'))"],
            capture_output=True, text=True, check=False)
        hta_version = out.stdout.strip() or None
    return {
        "cpu": cpu, "cores": os.cpu_count(), "mem_gib": round(mem_kb / 2**20, 1),
        "platform": platform.platform(), "python": sys.version.split()[0],
        "torch": _version("torch"), "pandas": _version("pandas"),
        "pyarrow": _version("pyarrow"), "msgspec": _version("msgspec"),
        "hta": hta_version, "loadavg_start": os.getloadavg(),
    }


def _fmt_dict(stats: dict[str, Any] | None) -> str:
    if stats is None:
        return "n/a"
    return _fmt(Stats(stats["median"], stats["min"], stats["max"], stats["n"]))


def markdown_table(result: dict[str, Any]) -> str:
    """The rows of a results JSON (from run.py --out) as a Markdown table."""
    lines = ["| target | ours: median [min-max] | baseline | ratio | limit | result |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in result["rows"]:
        verdict = {True: "PASS", False: "**FAIL**", None: "n/a"}[r["pass"]]
        ratio = f"{r['ratio']:.3f}" if r["ratio"] is not None else "n/a"
        base = _fmt_dict(r["baseline"])
        if r.get("baseline_name"):
            base += f" ({r['baseline_name']})"
        lines.append(f"| {r['target']} | {_fmt_dict(r['ours'])} | {base} | {ratio} | "
                     f"{r['limit']} | {verdict} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import json

    print(markdown_table(json.loads(Path(sys.argv[1]).read_text())))
