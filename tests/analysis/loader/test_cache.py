"""The Arrow cache beside a trace: used when fresh, ignored when stale or broken, and never a
reason for a load to fail."""

from __future__ import annotations

import os

import pytest
from support.readonly import read_only

import autoprof.analysis.loader.formats as formats_module
from autoprof.analysis import load as load_now
from autoprof.analysis.loader.cache import cache_path, wait_for_writes


def load(*args, **kwargs):
    """``load``, then wait for the background cache write it started (if any)."""
    run = load_now(*args, **kwargs)
    wait_for_writes()
    return run


def _forbid_decoding(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("the trace was decoded although a fresh cache exists")

    monkeypatch.setattr(formats_module, "read", refuse)


def test_second_load_reads_the_cache(trace_copy, with_cache, monkeypatch):
    first = load(trace_copy)
    assert cache_path(trace_copy).is_file()
    _forbid_decoding(monkeypatch)
    second = load(trace_copy)
    assert second.events.equals(first.events)
    assert second.trace_metadata == first.trace_metadata
    assert list(second.events.dtypes) == list(first.events.dtypes)


def test_a_changed_trace_invalidates_the_cache(trace_copy, with_cache):
    load(trace_copy)
    text = trace_copy.read_text().replace('"aten::mm"', '"aten::XX"')
    trace_copy.write_text(text)
    reloaded = load(trace_copy)
    assert (reloaded.events["name"] == "aten::XX").sum() == 3


def test_a_stale_key_is_ignored_even_with_the_same_size(trace_copy, with_cache):
    load(trace_copy)
    st = trace_copy.stat()
    os.utime(trace_copy, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    calls = []
    original = formats_module.read
    formats_module.read = lambda *a, **k: calls.append(1) or original(*a, **k)
    try:
        load(trace_copy)
    finally:
        formats_module.read = original
    assert calls == [1]


def test_a_corrupt_cache_is_ignored_and_rewritten(trace_copy, with_cache):
    expected = load(trace_copy).events
    cache_path(trace_copy).write_bytes(b"ARROW1\x00garbage")
    assert load(trace_copy).events.equals(expected)
    assert cache_path(trace_copy).read_bytes()[:6] == b"ARROW1"
    assert cache_path(trace_copy).stat().st_size > 100


def test_a_read_only_folder_just_means_no_cache(trace_copy, with_cache, monkeypatch):
    read_only(monkeypatch, trace_copy.parent)
    with pytest.raises(PermissionError):  # what the loader meets, as root too
        (trace_copy.parent / "probe").write_bytes(b"")
    assert len(load(trace_copy).events) == 32
    assert not cache_path(trace_copy).exists()


def test_an_unwritable_cache_location_does_not_fail_the_load(trace_copy, with_cache):
    cache_path(trace_copy).mkdir()  # a folder where the cache file should go
    assert len(load(trace_copy).events) == 32


def test_cache_disabled_writes_nothing(trace_copy):
    load(trace_copy)
    assert not cache_path(trace_copy).exists()


def test_progress_reports_increasing_fractions_ending_at_one(trace_copy):
    seen: list[tuple[float, str]] = []
    load(trace_copy, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(isinstance(m, str) and m for _, m in seen)


def test_a_permission_error_while_caching_does_not_fail_the_load(
    trace_copy, with_cache, monkeypatch
):
    """What a read-only folder does when not running as root (root ignores the mode bits)."""
    import autoprof.analysis.loader.cache as cache

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(cache.runfolder, "atomic_open", denied)
    assert len(load(trace_copy).events) == 32
    assert not cache_path(trace_copy).exists()


def test_small_traces_are_not_cached_by_default(trace_copy, monkeypatch):
    monkeypatch.setenv("AUTOPROF_CACHE", "1")
    monkeypatch.delenv("AUTOPROF_CACHE_MIN_BYTES", raising=False)
    load(trace_copy)
    assert not cache_path(trace_copy).exists()


def test_progress_covers_decompression_and_chunks_of_a_big_gz(tmp_path, monkeypatch):
    from support.synthetic import write_synthetic_trace

    import autoprof.analysis.loader.decode as decode

    monkeypatch.setattr(decode, "CHUNK_BYTES", 256 * 1024)
    path = write_synthetic_trace(tmp_path / "big.pt.trace.json.gz", 20_000, gz=True)
    seen: list[tuple[float, str]] = []
    load(path, progress=lambda f, m: seen.append((f, m)))
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(m.startswith("decompressing") for _, m in seen)
    assert sum(m.startswith("decoded") for _, m in seen) >= 5


def test_at_interpreter_exit_the_cache_is_written_inline(trace_copy, with_cache, monkeypatch):
    """autoprof writes its tables from an atexit hook, after Python stopped waiting for
    threads: a cache thread started then could be cut off, so the write happens inline."""
    import threading

    import autoprof.analysis.loader.cache as cache

    class Finished:
        def is_alive(self) -> bool:
            return False

    started = []
    monkeypatch.setattr(cache.threading, "main_thread", lambda: Finished())
    monkeypatch.setattr(cache.threading, "Thread",
                        lambda *a, **k: started.append(1) or threading.Thread(*a, **k))
    load_now(trace_copy)  # no waiting: the file must be there already
    assert cache_path(trace_copy).is_file() and started == []
