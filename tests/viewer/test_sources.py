"""Opening traces other than the listed runs: by path (confined to the folder) and upload."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from support.apptest import charts, markdown_texts, open_app, run_labels, visit
from support.viewer import H200, add_h200


def _folder_with_outside_links(tmp_path: Path) -> Path:
    root = tmp_path / "traces"
    root.mkdir()
    add_h200(root)
    outside = tmp_path / "outside"
    add_h200(outside)
    (root / "loose").mkdir()
    trace = (H200 / "matmul_add/n64_cold/trace.json").read_text()
    (root / "loose" / "plain.json").write_text(trace)
    (tmp_path / "secret.json").write_text(trace)
    os.symlink(outside / "matmul_add", root / "linked_run")
    os.symlink(tmp_path / "secret.json", root / "loose" / "link.json")
    return root


def _open_path(at, rel: str):
    at.radio(key="source").set_value("Trace by path").run()
    at.text_input(key="open_path").input(rel).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_trace_by_path_inside_the_folder(tmp_path, monkeypatch):
    root = _folder_with_outside_links(tmp_path)
    at = _open_path(open_app(root, monkeypatch), "loose/plain.json")
    visit(at, "ops")
    assert [s["title"].split(":")[0] for s in charts(at)] == ["CPU", "GPU"]


def test_paths_outside_the_folder_are_refused(tmp_path, monkeypatch):
    root = _folder_with_outside_links(tmp_path)
    at = open_app(root, monkeypatch)
    listed = run_labels(at)
    assert not any("linked_run" in p for p in listed), listed
    for rel in ("../secret.json", str(tmp_path / "secret.json"), "loose/link.json",
                "linked_run/20261130-070000-000064"):
        _open_path(at, rel)
        visit(at, "overview")
        codes = " ".join(c.value for c in at.code)
        assert "refused" in codes and "outside the traces folder" in codes, (rel, codes)
        assert not at.get("vega_lite_chart")


def test_upload_is_loaded_from_a_private_temp_folder(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    root.mkdir()
    at = open_app(root, monkeypatch)
    at.radio(key="source").set_value("Upload").run()
    data = (H200 / "matmul_add/n4096_cold/trace.json").read_bytes()
    at.file_uploader(key="upload").upload("mine.json", data, "application/json").run()
    assert not at.exception, [e.value for e in at.exception]
    visit(at, "overview")
    assert any("compute-bound" in t for t in markdown_texts(at))
    from autoprof.viewer._loading import _upload_dir

    folder = _upload_dir()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert not folder.is_relative_to(root)


def test_upload_of_garbage_shows_the_error(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    root.mkdir()
    at = open_app(root, monkeypatch)
    at.radio(key="source").set_value("Upload").run()
    at.file_uploader(key="upload").upload("bad.json", json.dumps({"foo": 1}).encode()).run()
    visit(at, "overview")
    assert "bad.json" in " ".join(c.value for c in at.code)
    assert any("could not be loaded" in t for t in markdown_texts(at))
