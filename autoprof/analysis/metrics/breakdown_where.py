"""The breakdown's positional rows of one rank and its ``where`` table: the ops and regions
that hold each bucket's time (metrics/breakdown.py splits the steps; this names the holders).

| rank | bucket | name | us |
| --- | --- | --- | --- |
| 0 | host_launch | aten::matmul | 84.0 |
| 0 | host_untraced | between ops in seed_n64 | 16.1 |
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from autoprof.analysis.loader.vocabulary import STEP_NAME
from autoprof.analysis.metrics._tree import has_ancestor_in, parent_positions
from autoprof.analysis.metrics.stats import factorized, isin_mask, name_matches

REGION_CATS = frozenset({"user_annotation", "python_function"})
NOT_HOST_WORK_CATS = frozenset({"Trace", "trace", "gpu_user_annotation"})
WHERE_COLUMNS = ["rank", "bucket", "name", "us"]
NO_REGION = "(outside any region)"


class Rows:
    """Positional views of one rank's events: parent positions, masks by kind."""

    def __init__(self, ev: pd.DataFrame) -> None:
        self.n = len(ev)
        self.ts = ev["ts_us"].to_numpy(float)
        self.end = ev["end_us"].to_numpy(float)
        self.parent = parent_positions(ev)
        self.cpu = isin_mask(ev["lane"], ("cpu",)) & ~isin_mask(ev["cat"], NOT_HOST_WORK_CATS)
        self.region = self.cpu & isin_mask(ev["cat"], REGION_CATS)
        self.step_span = self.cpu & name_matches(ev["name"], STEP_NAME)
        self.work = ev["is_gpu_work"].to_numpy(dtype=bool)
        self.codes, self.uniques = factorized(ev["name"])

    def named(self, name: str | None) -> np.ndarray:
        hit = np.fromiter((u == name for u in self.uniques), bool, len(self.uniques))
        return hit[self.codes] if name is not None else np.zeros(self.n, dtype=bool)

    def names(self, mask: np.ndarray) -> np.ndarray:
        return np.asarray(np.asarray(self.uniques, dtype=object)[self.codes[mask]])


def where_table(rows: Rows, points: np.ndarray, code: np.ndarray, in_window: np.ndarray,
           rank: int, holders: dict[str, tuple[np.ndarray, np.ndarray | None,
                                               np.ndarray | None]],
           regions: np.ndarray, bucket_codes: dict[str, int]) -> pd.DataFrame:
    """Per bucket: how much of it falls inside each holder (the outermost rows, or the given
    intervals of those rows), summed by name; untraced time goes to the innermost enclosing
    region. ``code`` holds each segment's bucket as its ``bucket_codes`` number."""
    seg_len = np.diff(points)

    def overlap(bucket: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        b_len = np.where((code == bucket_codes[bucket]) & in_window, seg_len, 0.0)
        cum = np.concatenate([[0.0], np.cumsum(b_len)])

        def upto(x: np.ndarray) -> np.ndarray:
            k = np.clip(np.searchsorted(points, x, "right") - 1, 0, len(seg_len) - 1)
            part = np.clip(x - points[k], 0.0, seg_len[k]) * (b_len[k] > 0)
            return cum[k] + np.where(x > points[0], part, 0.0)

        return np.asarray(upto(hi) - upto(lo))

    parts = _Parts(rows.uniques)
    for bucket, (mask, lo, hi) in holders.items():
        outer = mask & ~has_ancestor_in(rows.parent, mask)
        if not outer.any():
            continue
        if lo is None or hi is None:
            lo, hi = rows.ts[outer], rows.end[outer]
        labels = (parts.texts(_labels(rows, outer, bucket)) if bucket == "host_sync"
                  else rows.codes[outer])
        parts.add(bucket, labels, overlap(bucket, lo, hi))
    if regions.any():
        us = overlap("host_untraced", rows.ts[regions], rows.end[regions])
        pos = np.flatnonzero(regions)
        index_of = np.full(rows.n, -1, dtype=np.int64)
        index_of[pos] = np.arange(len(pos))
        up = rows.parent[pos]
        inner = us.copy()
        has = up >= 0
        has[has] = index_of[up[has]] >= 0
        np.subtract.at(inner, index_of[up[has]], us[has])  # what a nested region holds
        parts.add("host_untraced", parts.between_ops(rows.codes[regions]),
                  np.maximum(inner, 0.0))
    return parts.table(rank)


class _Parts:
    """The holders' time per bucket, each holder's label as a code into one vocabulary (the
    names' own codes first, then other labels), summed per (bucket, label) without building
    a text per row."""

    def __init__(self, names: np.ndarray) -> None:
        self.vocab: list[object] = list(names)
        self.named = len(self.vocab)
        self._region: dict[int, int] = {}  # name code -> code of "between ops in <name>"
        self.buckets: list[str] = []
        self.parts: list[tuple[int, np.ndarray, np.ndarray]] = []

    def texts(self, labels: np.ndarray) -> np.ndarray:
        """Codes for labels given as text (one new code per distinct text)."""
        codes, uniques = pd.factorize(np.asarray(labels, dtype=object))
        self.vocab.extend(uniques.tolist())
        return np.asarray(codes + len(self.vocab) - len(uniques), dtype=np.int64)

    def between_ops(self, name_codes: np.ndarray) -> np.ndarray:
        """Codes of the labels `between ops in <name>` of regions named by `name_codes`."""
        distinct, inverse = np.unique(name_codes, return_inverse=True)
        for c in distinct.tolist():
            if c not in self._region:
                self._region[c] = len(self.vocab)
                self.vocab.append(f"between ops in {self.vocab[c]}")
        return np.array([self._region[c] for c in distinct.tolist()],
                        dtype=np.int64)[inverse.reshape(-1)]

    def add(self, bucket: str, labels: np.ndarray, us: np.ndarray) -> None:
        if bucket not in self.buckets:
            self.buckets.append(bucket)
        self.parts.append((self.buckets.index(bucket), np.asarray(labels, dtype=np.int64), us))

    def table(self, rank: int) -> pd.DataFrame:
        """WHERE_COLUMNS, by bucket, largest first (a name that is NA is left out)."""
        if not self.parts:
            return pd.DataFrame(columns=WHERE_COLUMNS)
        bucket = np.concatenate([np.full(len(u), b, dtype=np.int64) for b, _, u in self.parts])
        label = np.concatenate([lab for _, lab, _ in self.parts])
        us = np.concatenate([u for _, _, u in self.parts])
        vocab = np.empty(len(self.vocab), dtype=object)
        vocab[:] = self.vocab
        keep = (us > 0) & ~np.asarray(pd.isna(vocab), dtype=bool)[label]
        sums = pd.Series(us[keep]).groupby([bucket[keep], label[keep]], sort=False).sum()
        b_at = sums.index.get_level_values(0).to_numpy(dtype=np.int64)
        l_at = sums.index.get_level_values(1).to_numpy(dtype=np.int64)
        res = pd.DataFrame({"rank": rank,
                            "bucket": np.asarray(self.buckets, dtype=object)[b_at],
                            "name": vocab[l_at], "us": sums.to_numpy(dtype=float)})
        return res.sort_values(["bucket", "us"], ascending=[True, False], kind="stable")[
            WHERE_COLUMNS].reset_index(drop=True)


def _labels(rows: Rows, mask: np.ndarray, bucket: str) -> np.ndarray:
    """The holders' names; a sync also names its innermost enclosing region
    (`aten::item in log_grad_norms`)."""
    names = rows.names(mask)
    if bucket != "host_sync":
        return names
    pos = np.flatnonzero(mask)
    region = np.full(len(pos), -1, dtype=np.int64)
    cur = rows.parent[pos]
    while True:
        look = (region < 0) & (cur >= 0)
        if not look.any():
            break
        found = look.copy()
        found[look] = rows.region[cur[look]] & ~rows.step_span[cur[look]]
        region[found] = cur[found]
        nxt = cur.copy()
        nxt[look] = rows.parent[cur[look]]
        cur = np.where(look & ~found, nxt, -1)
    uniques = np.asarray(rows.uniques, dtype=object)
    return np.array([f"{n} in {uniques[rows.codes[r]]}" if r >= 0 else str(n)
                     for n, r in zip(names, region, strict=True)], dtype=object)
