"""Bad input: every case gives exactly one TraceError whose str is one line naming
the file and the problem, in bounded time and memory; tolerated damage loads with the
dropped or repaired events counted in Run.load_warnings. docs/loader.md lists the rules."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
from support.invariants import check_events
from support.loader_paths import BAD, MATMUL, REPO

from autoprof.analysis import TraceError, load

FATAL = {
    "empty.json": "empty file",
    "truncated.json": "truncated JSON",
    "not_a_trace.json": "no 'traceEvents' key (keys found: ['foo', 'bar'])",
    "list_of_numbers.json": "not JSON objects",
    "events_not_a_list.json": "'traceEvents' is not a list",
    "no_events.json": "'traceEvents' is empty",
    "all_events_missing_ts.json": "without a finite ts",
    "not_gzip.json.gz": "named .gz but not gzip",
    "truncated.json.gz": "truncated gzip",
    "gzip_of_garbage.json.gz": "not JSON",
    "binary_garbage.json": "not JSON",
    "png_named_json.json": "not JSON",
    "chrome_devtools.json": "not a torch.profiler trace",
    "speedscope.json": "no 'traceEvents' key",
    "run_future_schema": "schema_version 99 is newer",
    "run_missing_keys": "lacks required keys ['schema_version', 'name']",
    "run_no_trace": "run folder has no trace (status 'failed', error: RuntimeError: CUDA out",
    "run_manifest_not_json": "manifest is not valid JSON",
}

TOLERATED = {
    "missing_fields.json": ["dropped 1 complete events without a finite ts",
                            "dropped 1 complete events without a finite dur",
                            "not JSON objects", "coerced 1 events"],
    "bad_durations.json": ["with a negative dur", "with a dur above",
                           "without a finite dur", "without a finite ts"],
    "out_of_order.json": [],
    "non_utf8.json": ["invalid UTF-8"],
    "control_chars.json": ["3 control characters"],
}


def assert_one_line_error(path: Path, expected: str) -> TraceError:
    started = time.perf_counter()
    with pytest.raises(TraceError) as caught:
        load(path)
    assert time.perf_counter() - started < 10
    err = caught.value
    text = str(err)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(str(path)) or text.startswith(str(path / "manifest.json")), text
    assert expected in text, text
    assert type(err) is TraceError
    return err


def test_corpus_is_complete():
    on_disk = {p.name for p in BAD.iterdir()
               if p.name != "make_corpus.py" and not p.name.endswith(".autoprof.arrow")}
    assert on_disk == set(FATAL) | set(TOLERATED)


@pytest.mark.parametrize("name", sorted(FATAL))
def test_fatal_inputs_give_one_trace_error(name):
    assert_one_line_error(BAD / name, FATAL[name])


@pytest.mark.parametrize("name", sorted(TOLERATED))
def test_tolerated_damage_loads_and_is_counted(name):
    run = load(BAD / name)
    check_events(run.events)
    reference = load(MATMUL / "n64_cold" / "trace.json").events
    for expected in TOLERATED[name]:
        assert any(expected in w for w in run.load_warnings), (expected, run.load_warnings)
    if not TOLERATED[name]:
        assert run.load_warnings == []
    good = run.events[~run.events["pid"].isin([1, -1])]  # the corpus adds bad rows there
    assert len(good) == len(reference)
    assert good["self_us"].sum() == pytest.approx(reference["self_us"].sum())


def test_out_of_order_events_give_the_same_table():
    shuffled = load(BAD / "out_of_order.json").events
    reference = load(MATMUL / "n64_cold" / "trace.json").events
    assert shuffled.equals(reference)


def test_control_characters_never_reach_names():
    names = load(BAD / "control_chars.json").events["name"]
    assert not names.str.contains(r"[\x00-\x1f]", regex=True).any()
    assert names.str.contains("mm").any()


def _bomb(path: Path, member_mib: int = 16, members: int = 64) -> Path:
    """A valid gzip of 1 GiB (64 members of 16 MiB of spaces), ~1 MB on disk."""
    member = gzip.compress(b" " * (member_mib * 1024**2), compresslevel=9)
    path.write_bytes(member * members)
    return path


def _run_child(code: str, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **env_extra, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120)


CHILD = """
import resource, sys
from autoprof.analysis import TraceError, load
try:
    load(sys.argv[1] if len(sys.argv) > 1 else {path!r})
    print("LOADED")
except TraceError as exc:
    print("ERROR", exc)
# VmHWM is this process's own peak; ru_maxrss would also count the parent's memory at
# fork time (Linux carries the old high-water mark across exec), i.e. pytest's
hwm = [line for line in open("/proc/self/status") if line.startswith("VmHWM")]
peak_kib = int(hwm[0].split()[1]) if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print("RSS_MIB", peak_kib / 1024)
"""


def test_gzip_bomb_fails_fast_with_bounded_memory(tmp_path):
    bomb = _bomb(tmp_path / "bomb.json.gz")
    started = time.perf_counter()
    done = _run_child(CHILD.format(path=str(bomb)),
                      {"AUTOPROF_MAX_TRACE_BYTES": str(32 * 1024**2), "AUTOPROF_CACHE": "0"})
    elapsed = time.perf_counter() - started
    detail = f"stdout={done.stdout[-2000:]!r} stderr={done.stderr[-2000:]!r}"
    errors = [line for line in done.stdout.splitlines() if line.startswith(("ERROR", "LOADED"))]
    assert errors == [f"ERROR {bomb}: decompressed size exceeds the 32.0 MiB limit (gzip bomb? "
                      "raise AUTOPROF_MAX_TRACE_BYTES if the trace is real)"], detail
    rss_mib = float(next(line for line in done.stdout.splitlines()
                         if line.startswith("RSS_MIB")).split()[1])
    assert rss_mib < 400, (rss_mib, detail)  # 1 GiB would have been inflated without the cap
    assert elapsed < 60


def test_plain_file_above_the_limit_is_refused_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (2 * 1024**2))
    monkeypatch.setenv("AUTOPROF_MAX_TRACE_BYTES", str(1024**2))
    assert_one_line_error(path, "above the 1.0 MiB limit")


def test_very_long_line_of_garbage(tmp_path):
    path = tmp_path / "long.json"
    path.write_bytes(b"x" * (30 * 1024**2))
    assert_one_line_error(path, "not JSON")


def test_very_long_name_is_kept(tmp_path):
    raw = json.loads((MATMUL / "n64_cold" / "trace.json").read_text())
    raw["traceEvents"][1]["name"] = "n" * 5_000_000
    path = tmp_path / "long_name.json"
    path.write_text(json.dumps(raw))
    assert load(path).events["name"].str.len().max() == 5_000_000


@pytest.mark.parametrize("where", ["top", "args", "dims"])
def test_deeply_nested_json(tmp_path, where):
    deep = "[" * 100_000 + "]" * 100_000
    text = {
        "top": deep,
        "args": '{"traceEvents": [{"ph": "X", "args": ' + deep + "}]}",
        "dims": '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "pid": 1,'
                ' "tid": 1, "args": {"Input Dims": ' + deep + "}}]}",
    }[where]
    path = tmp_path / f"deep_{where}.json"
    path.write_text(text)
    assert_one_line_error(path, "nested too deeply")


def test_big_binary_garbage_is_refused_without_decoding(tmp_path):
    path = tmp_path / "garbage.json"
    # a NUL first: random bytes read as "{" or "[" past leading whitespace about 1 time in 125
    path.write_bytes(b"\x00" + os.urandom(8 * 1024**2))
    started = time.perf_counter()
    with pytest.raises(TraceError, match="not JSON"):
        load(path)
    assert time.perf_counter() - started < 2


def test_corrupt_gzip_stream(tmp_path):
    data = bytearray(gzip.compress((MATMUL / "n64_cold" / "trace.json").read_bytes()))
    data[200:260] = b"\xff" * 60
    path = tmp_path / "corrupt.json.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(TraceError) as caught:
        load(path)
    assert "gzip" in str(caught.value) or "JSON" in str(caught.value)


def test_a_folder_is_not_a_trace_and_a_missing_file_is_named(tmp_path):
    assert_one_line_error(tmp_path, "no trace files")
    assert_one_line_error(tmp_path / "missing.json", "no such file")


def test_multi_member_gzip_is_read_whole(tmp_path):
    text = (MATMUL / "n64_cold" / "trace.json").read_bytes()
    half = len(text) // 2
    path = tmp_path / "two_members.json.gz"
    path.write_bytes(gzip.compress(text[:half]) + gzip.compress(text[half:]))
    assert len(load(path).events) == 32
    assert zlib  # the stdlib inflater is what the loader uses


def test_trace_error_pickles_and_keeps_its_parts():
    import pickle

    err = TraceError("/x/run", "bad\nthing")
    assert str(err) == "/x/run: bad thing"
    again = pickle.loads(pickle.dumps(err))
    assert str(again) == str(err) and again.path == "/x/run" and again.problem == "bad thing"


def test_utf8_byte_order_mark_is_accepted(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + (MATMUL / "n64_cold" / "trace.json").read_bytes())
    assert len(load(path).events) == 32
