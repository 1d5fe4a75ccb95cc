"""The bad-input corpus (tests/data/bad) in the viewer: each bad run shows its error line,
and the good runs beside them still work."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from support.apptest import charts, label_path, open_app, run_labels, select_run, visit
from support.viewer import N4096, REPO, add_h200

BAD = REPO / "tests" / "data" / "bad"
OLD = REPO / "tests" / "data" / "old_schema_run"


def _corpus_folder(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    root.mkdir()
    for entry in BAD.iterdir():
        if entry.name.endswith(".arrow") or entry.suffix == ".py":
            continue
        if entry.is_dir():  # run folders: <name>/<run_id>/
            shutil.copytree(entry, root / entry.name / "20261130-000000-000000")
        else:
            shutil.copy(entry, root / entry.name)
    shutil.copytree(OLD, root, dirs_exist_ok=True)
    add_h200(root)
    (tmp_path / "outside").mkdir()
    shutil.copy(REPO / "tests/data/h200/matmul_add/n64_cold/trace.json",
                tmp_path / "outside" / "secret.json")
    os.symlink(tmp_path / "outside" / "secret.json", root / "link_out.json")
    return root


@pytest.mark.slow
def test_every_bad_input_shows_an_error_and_good_runs_still_work(tmp_path, monkeypatch):
    root = _corpus_folder(tmp_path)
    at = open_app(root, monkeypatch)
    labels = run_labels(at)
    assert not any("link_out" in lbl for lbl in labels), "a link out of the folder was listed"
    errors, rendered = {}, []
    for label in labels:
        path = label_path(at, label)
        select_run(at, label)
        visit(at, "overview")
        codes = [c.value for c in at.code]
        if codes:
            errors[label] = codes[0]
            # one line that names the file (or the run folder) and the problem
            assert "\n" not in codes[0].strip() and path in codes[0], (path, codes[0])
        else:
            assert at.metric, f"{label}: neither an error nor a rendered overview"
            rendered.append(label)
    assert len(errors) >= 12, sorted(errors)
    assert not any("matmul_add" in lbl for lbl in errors), errors
    select_run(at, N4096)
    visit(at, "ops")
    assert len(charts(at)) == 2 and not at.error
    assert any("20251001" in lbl for lbl in rendered), rendered  # the old-schema run opens
