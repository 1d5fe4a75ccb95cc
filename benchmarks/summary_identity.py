"""Does this checkout print the same summaries as another revision? Every run under the paths.

For every run folder and trace ``autoprof.analysis.find_runs`` finds under the given paths
(default: tests/data and every tests/analysis/**/data), the summary JSON (what
``autoprof summary --json`` prints: ``load(path).summary()``; a run that does not load gives
its error's type and message instead) is computed with the autoprof this process imports,
with the caches beside traces off (``AUTOPROF_CACHE=0``: nothing read, nothing written).

    # references from a revision (git archive into a temporary folder, this script run there)
    python benchmarks/summary_identity.py --rev main
    # or in two steps, with any autoprof on PYTHONPATH
    PYTHONPATH=/tmp/ref python benchmarks/summary_identity.py --write /tmp/refs
    python benchmarks/summary_identity.py --against /tmp/refs

Each run is one JSON file in the references folder (named by its path). A comparison
prints one line per run that differs (the first differing keys) and exits 1 if any does.
Keys that would hold wall-clock timings (``TIMING_KEYS``) are left out of both sides; the
summary holds none today, and its paths are the absolute paths given, the same on both sides.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TIMING_KEYS = frozenset({"elapsed_s", "load_s", "analysis_s", "summary_s"})
MAX_REPORTED_KEYS = 5


def default_roots() -> list[Path]:
    return [REPO / "tests" / "data", *sorted((REPO / "tests" / "analysis").glob("**/data"))]


def run_paths(roots: list[Path]) -> list[str]:
    """Every run the project's own discovery finds under `roots`, as absolute paths."""
    from autoprof.analysis import find_runs

    out: set[str] = set()
    for root in roots:
        found = find_runs(root)
        out |= {str(Path(str(p)).resolve()) for p in found["path"]} if len(found) else set()
    return sorted(out)


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def summary_of(path: str) -> Any:
    """The run's summary as JSON would carry it, or its error."""
    import autoprof

    try:
        summary = autoprof.load(path).summary()
        text = json.dumps(summary, allow_nan=False, default=str)
    except Exception as exc:  # noqa: BLE001 - a run's failure is part of its output
        return {"error": type(exc).__name__, "message": str(exc)}
    return without_timings(json.loads(text))


def reference_name(path: str) -> str:
    return hashlib.sha1(path.encode()).hexdigest()[:16] + ".json"


def write_references(paths: list[str], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for path in paths:
        record = {"path": path, "summary": summary_of(path)}
        (folder / reference_name(path)).write_text(json.dumps(record, sort_keys=True))


def differences(a: Any, b: Any, where: str = "") -> Iterator[str]:
    """Paths of the keys (or list items) where `a` and `b` differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                yield f"{where}/{k} (only on one side)"
            else:
                yield from differences(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from differences(x, y, f"{where}[{i}]")
    elif a != b:
        yield f"{where or '/'}: {json.dumps(a)[:80]} != {json.dumps(b)[:80]}"


def compare(paths: list[str], folder: Path) -> int:
    """Print each run whose summary differs from its reference; the number that differ."""
    differ = missing = 0
    for path in paths:
        ref = folder / reference_name(path)
        if not ref.exists():
            missing += 1
            print(f"no reference: {path}")
            continue
        want = json.loads(ref.read_text())["summary"]
        got = json.loads(json.dumps(summary_of(path), sort_keys=True))
        diff = list(differences(want, got))
        if diff:
            differ += 1
            print(f"DIFFERS {path}: " + "; ".join(diff[:MAX_REPORTED_KEYS]))
    same = len(paths) - differ - missing
    print(f"{len(paths)} runs: {same} identical, {differ} differ, {missing} without reference")
    return differ + missing


def checkout(rev: str, folder: Path) -> None:
    """The tree of `rev` (this repository's) written into `folder`."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], check=True,
                             capture_output=True).stdout
    tar_path = folder / "tree.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder / "tree", filter="data")


def references_of_rev(rev: str, paths: list[str], folder: Path) -> None:
    """Write the references with the autoprof of `rev` (this script run in a fresh process
    with that tree first on PYTHONPATH)."""
    checkout(rev, folder)
    env = {**os.environ, "PYTHONPATH": str(folder / "tree"), "AUTOPROF_CACHE": "0"}
    listing = folder / "paths.json"
    listing.write_text(json.dumps(paths))
    subprocess.run([sys.executable, __file__, "--write", str(folder / "refs"),
                    "--paths-from", str(listing)], check=True, env=env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="*", type=Path, help="folders to search for runs")
    parser.add_argument("--write", type=Path, help="write references into this folder")
    parser.add_argument("--against", type=Path, help="compare with references in this folder")
    parser.add_argument("--rev", help="compare with the references of this git revision")
    parser.add_argument("--paths-from", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.environ["AUTOPROF_CACHE"] = "0"
    if args.paths_from:
        paths = [str(p) for p in json.loads(args.paths_from.read_text())]
    else:
        paths = run_paths([r.resolve() for r in args.roots] or default_roots())
    if args.write:
        write_references(paths, args.write)
        print(f"{len(paths)} references written to {args.write}")
        return 0
    if args.against:
        return 1 if compare(paths, args.against) else 0
    if not args.rev:
        parser.error("give --write, --against or --rev")
    with tempfile.TemporaryDirectory(prefix="summary-identity-") as tmp:
        references_of_rev(args.rev, paths, Path(tmp))
        return 1 if compare(paths, Path(tmp) / "refs") else 0


if __name__ == "__main__":
    sys.exit(main())
