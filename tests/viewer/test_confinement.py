"""A client cannot make the viewer read outside its folder, block it, or exhaust its memory."""

from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys

import pytest
from streamlit import config
from support.apptest import UNESCAPED_MARKUP, markdown_texts, open_app, visit
from support.viewer import REPO

from autoprof.viewer._guard import LOOPBACK, host_name, refusal
from autoprof.viewer._loading import inflated_size

CPU_RUN = next(p for p in (REPO / "traces" / "examples" / "cpu_mlp_train").iterdir()
               if p.is_dir())
ALLOWED = LOOPBACK | {"viewer.lan"}


@pytest.mark.parametrize(("headers", "refused"), [
    ({"Host": "127.0.0.1:8501", "Origin": "http://127.0.0.1:8501"}, False),
    ({"Host": "localhost:8501"}, False),
    ({"Host": "[::1]:8501", "Origin": "http://[::1]:8501"}, False),
    ({"host": "Viewer.LAN:80"}, False),  # started with --browser.serverAddress viewer.lan
    ({}, False),  # no HTTP request at all (AppTest)
    ({"Host": "evil.example:8501", "Origin": "http://evil.example:8501"}, True),  # rebinding
    ({"Host": "127.0.0.1:8501", "Origin": "https://evil.example"}, True),
    ({"Host": "127.0.0.1.evil.example:8501"}, True),
    ({"Host": "127.0.0.2:8501"}, False),  # loopback, however spelled
    ({"Host": "192.168.1.5:8501", "Origin": "http://192.168.1.5:8501"}, True),  # not served
    ({"Host": "192.168.1.5:8501", "Origin": "http://evil.example"}, True),
])
def test_only_the_viewers_own_names_are_served(headers, refused):
    assert (refusal(headers, ALLOWED) is not None) is refused


@pytest.mark.parametrize(("headers", "refused"), [
    ({"Host": "192.168.1.5:8501", "Origin": "http://192.168.1.5:8501"}, False),  # typed IP
    ({"Host": "192.168.1.5:8501", "Origin": "http://evil.example"}, True),
    ({"Host": "evil.example:8501"}, True),
])
def test_a_typed_lan_address_is_accepted_only_when_serving_other_machines(headers, refused):
    assert (refusal(headers, ALLOWED, remote_ok=True) is not None) is refused


def test_host_name_drops_the_port_and_case():
    assert host_name("Example.COM:8501") == "example.com"
    assert host_name("[::1]:8501") == "::1"


def test_the_folder_cannot_be_changed_by_a_client(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    shutil.copytree(CPU_RUN, root / "cpu" / CPU_RUN.name)
    at = open_app(root, monkeypatch)
    assert [t.label for t in at.text_input] == []  # no folder box in the sidebar
    at.query_params["root"] = "/"
    at.run()
    assert f"Traces folder: {root.resolve()}" in list(markdown_texts(at))
    assert at.title[0].value == "Overview"  # still this folder's one run


def test_a_fifo_in_a_run_is_refused_before_it_is_opened(tmp_path, monkeypatch):
    run = tmp_path / "traces" / "cpu" / CPU_RUN.name
    shutil.copytree(CPU_RUN, run)
    (trace,) = run.glob("*.pt.trace.json.gz")
    trace.unlink()
    os.mkfifo(trace)  # open() on it would block every client of the viewer
    os.mkfifo(tmp_path / "traces" / "stray.json")  # a loose one: not even listed
    at = open_app(tmp_path / "traces", monkeypatch)
    assert at.title[0].value == "Overview"
    codes = " ".join(c.value for c in at.code)
    assert "refused" in codes and "not a regular file" in codes, codes


def test_an_upload_is_bounded_by_its_decompressed_size(tmp_path, monkeypatch):
    before = config.get_option("server.maxUploadSize")
    config.set_option("server.maxUploadSize", 1)  # MiB
    try:
        root = tmp_path / "traces"
        root.mkdir()
        at = open_app(root, monkeypatch)
        at.radio(key="source").set_value("Upload").run()
        bomb = gzip.compress(b" " * (3 * 1024**2))  # 3 KiB on the wire, 3 MiB inflated
        at.file_uploader(key="upload").upload("bomb.json.gz", bomb, "application/gzip").run()
        visit(at, "overview")
    finally:
        config.set_option("server.maxUploadSize", before)
    codes = " ".join(c.value for c in at.code)
    assert "bomb.json.gz: refused: more than 1 MiB once decompressed" in codes, codes
    assert any("could not be loaded" in t for t in markdown_texts(at))


def test_inflated_size_streams_every_member_and_stops_at_the_limit():
    member = gzip.compress(b"x" * 1000)
    assert inflated_size(member + member, 5000) == 2000
    assert inflated_size(member + member, 1500) is None
    assert inflated_size(b"[]", 10) == 2
    bomb = gzip.compress(bytes(64 * 1024**2))
    assert inflated_size(bomb, 1024**2) is None  # stops after about one block


def test_download_button_shows_the_file_name_as_text(tmp_path, monkeypatch):
    run = tmp_path / "traces" / "cpu" / CPU_RUN.name
    shutil.copytree(CPU_RUN, run)
    (trace,) = run.glob("*.pt.trace.json.gz")
    odd = trace.with_name("$x^2$ **b**.pt.trace.json.gz")
    trace.rename(odd)
    manifest = (run / "manifest.json").read_text().replace(trace.name, odd.name)
    (run / "manifest.json").write_text(manifest)
    at = visit(open_app(tmp_path / "traces", monkeypatch), "timeline")
    (button,) = at.get("download_button")
    label = button.proto.label
    assert re.sub(r"\\(.)", r"\1", label) == f"Download {odd.name}"  # shown as it is named
    assert not UNESCAPED_MARKUP.search(label), label  # no math, no bold


def test_a_fifo_manifest_is_listed_with_its_error_not_read(tmp_path, monkeypatch):
    root = tmp_path / "traces"
    shutil.copytree(CPU_RUN, root / "cpu" / CPU_RUN.name)
    fifo_run = root / "fifo" / "20261201-000000-000000"
    fifo_run.mkdir(parents=True)
    os.mkfifo(fifo_run / "manifest.json")  # reading it would block the listing for everyone
    at = open_app(root, monkeypatch)
    assert at.title[0].value == "Runs"
    codes = " ".join(c.value for c in at.code)
    assert f"{fifo_run / 'manifest.json'}: not a regular file" in codes, codes


CUT_SHORT = """
import hashlib, os, sys
from pathlib import Path
from autoprof.analysis.loader.source import read_bytes
path = Path(sys.argv[1])
data = read_bytes(path)
os.truncate(path, 0)  # another process rewrites the trace in place
print(hashlib.sha256(bytes(data)).hexdigest())  # reads every page
"""


@pytest.mark.parametrize("mmap_flag", ["1", "0"])
def test_a_trace_cut_short_while_read_ends_the_process_only_when_mapped(tmp_path, mmap_flag):
    trace = tmp_path / "plain.pt.trace.json"
    text = '{"traceEvents": [' + ",".join(['{"ph": "i"}'] * 100_000) + "]}"
    trace.write_text(text)
    env = dict(os.environ, AUTOPROF_MMAP=mmap_flag, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-c", CUT_SHORT, str(trace)], env=env,
                          capture_output=True, text=True, timeout=120)
    if mmap_flag == "1":
        assert done.returncode == -signal.SIGBUS, (done.returncode, done.stderr)
    else:
        assert done.returncode == 0, done.stderr  # the whole file, as it was when read
        assert done.stdout.strip() == hashlib.sha256(text.encode()).hexdigest()


def test_the_viewer_reads_traces_without_mapping_them(tmp_path, monkeypatch):
    monkeypatch.delenv("AUTOPROF_MMAP", raising=False)
    open_app(tmp_path, monkeypatch)
    assert os.environ["AUTOPROF_MMAP"] == "0"
