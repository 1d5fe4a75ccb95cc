"""Reads that cannot crash or hang the process: a plain trace cut short while it is read
(the loader streams the file, mapping nothing: with a map, that is SIGBUS), and FIFOs,
sockets and devices refused with a TraceError before anything opens them (open() on a FIFO
blocks)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from support.loader_paths import MATMUL, REPO
from support.synthetic import write_synthetic_trace

from autoprof.analysis import TraceError, load

CUT_SHORT_WHILE_STREAMED = r"""
import os, sys
from pathlib import Path
import autoprof
from autoprof.analysis import TraceError
import autoprof.analysis.loader.decode as decode
import autoprof.analysis.loader.source as source

source.READ_BYTES = 64 * 1024
decode.CHUNK_BYTES = 64 * 1024
real = decode.stream_bytes

class CutAfterFirstBlock:
    def __init__(self, path, start=0):
        self.inner = real(path, start)
        self.gzip, self.path = self.inner.gzip, path
        self.decoded_size = self.inner.decoded_size
    def __iter__(self):
        for i, block in enumerate(self.inner):
            if i == 1:
                os.truncate(self.path, 0)  # another process rewrites the trace in place
            yield block
    def fraction_read(self):
        return self.inner.fraction_read()
    def close(self):
        self.inner.close()
    @property
    def n_bytes(self):
        return self.inner.n_bytes

decode.stream_bytes = CutAfterFirstBlock
try:
    print(len(autoprof.load(Path(sys.argv[1])).events))
except TraceError as err:
    print(f"TraceError: {err}")
"""


def test_a_trace_cut_short_while_streamed_is_a_clean_error(tmp_path: Path) -> None:
    trace = write_synthetic_trace(tmp_path / "plain.pt.trace.json", 20_000)
    env = {k: v for k, v in os.environ.items() if k != "AUTOPROF_MMAP"}
    env.update(PYTHONPATH=str(REPO), AUTOPROF_CACHE="0")
    done = subprocess.run([sys.executable, "-c", CUT_SHORT_WHILE_STREAMED, str(trace)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (done.returncode, done.stderr)  # SIGBUS is -7
    # the stream ends early: the bytes read are a document cut short, said in one line
    assert done.stdout.strip() == (
        f"TraceError: {trace}: truncated JSON: the file ends before the trace does "
        "(export interrupted or file still being written?)")


def _special_files(tmp_path: Path) -> list[tuple[Path, str]]:
    fifo = tmp_path / "fifo.pt.trace.json"
    os.mkfifo(fifo)
    found = [(fifo, "a FIFO")]
    sock = tmp_path / "sock.json"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(sock))
    found.append((sock, "a socket"))
    if Path("/dev/null").exists():
        found.append((Path("/dev/null"), "a character device"))
    return found


def test_fifos_sockets_and_devices_are_refused_before_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import builtins

    real_open = builtins.open

    def guarded_open(file, *args, **kwargs):  # type: ignore[no-untyped-def]
        assert Path(str(file)).name not in ("fifo.pt.trace.json", "sock.json", "null"), file
        return real_open(file, *args, **kwargs)

    for path, kind in _special_files(tmp_path):
        monkeypatch.setattr(builtins, "open", guarded_open)
        with pytest.raises(TraceError) as err:
            load(path)
        monkeypatch.setattr(builtins, "open", real_open)
        assert str(err.value) == f"{path}: is {kind}, not a trace file"


def test_a_run_folder_listing_a_fifo_or_with_a_fifo_manifest_does_not_hang(
    tmp_path: Path,
) -> None:
    listed = tmp_path / "listed"
    listed.mkdir()
    os.mkfifo(listed / "host_1.1.pt.trace.json")
    (listed / "manifest.json").write_text(json.dumps(
        {"schema_version": 1, "name": "x", "status": "complete",
         "files": ["host_1.1.pt.trace.json"]}))
    fifo_manifest = tmp_path / "fifo_manifest"
    fifo_manifest.mkdir()
    (fifo_manifest / "host_1.1.pt.trace.json").write_bytes(
        (MATMUL / "n64_cold" / "trace.json").read_bytes())
    os.mkfifo(fifo_manifest / "manifest.json")
    for folder in (listed, fifo_manifest):
        done = subprocess.run([sys.executable, "-m", "autoprof", "summary", str(folder)],
                              capture_output=True, text=True, timeout=60, cwd=REPO)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("autoprof: error: ") and "FIFO" in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
