"""Everything autoprof writes goes through one exclusive-create primitive (``runfolder.owned``):
a link planted at the final name or at any temporary name is never written through, and
a name holding a FIFO, folder or link is never replaced; a cache read never follows a link
and never blocks on a FIFO. The writers: atomic files, fresh logs, a library's by-path
export, manifests, whatif.json, the raw trace and the source-lines trace."""

from __future__ import annotations

import gzip
import json
import os
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from autoprof import runfolder as rf
from autoprof.record import export
from autoprof.record.lines import LinesStep
from autoprof.runfolder import owned
from autoprof.runfolder.whatif import write_whatif

DATA = Path(__file__).resolve().parents[1] / "data"
MANIFEST = next((DATA / "gpu_h200_x2" / "runs" / "ddp_straggler").glob("*/manifest.json"))
SECRET = b"outside the run folder: must never change\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the folder autoprof writes in, which a planted link points at."""
    outside = tmp_path / "outside"
    outside.mkdir()
    path = outside / "victim.txt"
    path.write_bytes(SECRET)
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    return run


class _FakeProfiler:
    """torch.profiler's export as the writers see it: writes by path (and its own .tmp)."""

    def export_chrome_trace(self, path: str) -> None:
        with open(path + ".tmp", "w") as fh:  # noqa: PTH123 - as Kineto does: by path
            fh.write('{"traceEvents": []}')
        os.replace(path + ".tmp", path)


def _manifest(path: Path) -> None:
    rf.write_manifest(path, rf.Manifest.from_json(MANIFEST.read_bytes(), MANIFEST))


def _fresh(path: Path) -> None:
    with rf.open_fresh(path) as fh:
        fh.write(b"log\n")


def _whatif(path: Path) -> None:
    write_whatif(path.parent, {"schema_version": 1, "results": []})


def _lines(path: Path) -> None:
    step = LinesStep.__new__(LinesStep)  # only _write's use of the profiler matters here
    step._prof = _FakeProfiler()
    step._write(path.parent, path.name[len(rf.LINES_PREFIX): -len(rf.LINES_SUFFIX)], {})


WRITERS: dict[str, tuple[str, Callable[[Path], object]]] = {
    "atomic_write_bytes": ("table.txt", lambda p: rf.atomic_write_bytes(p, b"new", False)),
    "atomic_write_json": ("ops.json", lambda p: rf.atomic_write_json(p, {"a": 1})),
    "open_fresh": (".finish.log", _fresh),
    "write_through": (".w.1.pt.trace.json.raw",
                      lambda p: rf.write_through(p, lambda q: q.write_bytes(b"new"))),
    "manifest": ("manifest.json", _manifest),
    "whatif": ("whatif.json", _whatif),
    "lines trace": ("lines.w0.json.gz", _lines),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_writes_a_regular_file_it_reads_back(folder: Path, writer: str) -> None:
    """The positive control: each writer below does write, so a refusal means something."""
    name, write = WRITERS[writer]
    write(folder / name)
    assert (folder / name).is_file() and not (folder / name).is_symlink()
    assert (folder / name).stat().st_size > 0
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_at_the_final_name_is_neither_followed_nor_replaced(
        folder: Path, victim: Path, writer: str) -> None:
    name, write = WRITERS[writer]
    link = folder / name
    link.symlink_to(victim)
    with pytest.raises(rf.NotOurs, match="symlink"):
        write(link)
    assert victim.read_bytes() == SECRET
    assert link.is_symlink() and os.readlink(link) == str(victim)
    assert [p.name for p in folder.iterdir()] == [name]


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_a_link_at_the_temporary_name_is_never_written_through(
        folder: Path, victim: Path, writer: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even a temporary name guessed in advance (here: told, by fixing the name every write
    would use) is created exclusively: the write fails rather than write through."""
    name, write = WRITERS[writer]
    planted: list[Path] = []

    def guessed(path: Path) -> Path:
        tmp = path.with_name(f".{path.name}.{os.getpid()}.guessed.tmp")
        if not tmp.is_symlink():
            tmp.symlink_to(victim)
            planted.append(tmp)
        return tmp

    monkeypatch.setattr(owned, "temp_name", guessed)
    with pytest.raises(FileExistsError):
        write(folder / name)
    assert planted and victim.read_bytes() == SECRET
    assert all(p.is_symlink() for p in planted)


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling link"])
def test_what_is_not_a_regular_file_at_the_name_is_left_as_it_is(
        folder: Path, kind: str) -> None:
    target = folder / "table.txt"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "folder":
        target.mkdir()
    else:
        target.symlink_to(folder / "nowhere")
    with pytest.raises(rf.NotOurs):
        rf.atomic_write_text(target, "x", fsync=False)
    assert not (folder / "nowhere").exists()
    assert [p.name for p in folder.iterdir()] == ["table.txt"]  # no temporary left either


def test_the_old_predictable_temporary_names_are_not_used(folder: Path, victim: Path) -> None:
    """The source-lines trace used ``.<final>.<pid>.0.tmp`` and ``.1.tmp``, the per-rank
    cache ``.<cache>.<pid>.tmp``: links planted there stay untouched and the write works."""
    final = folder / "lines.w0.json.gz"
    old = [folder / f".{final.name}.{os.getpid()}.{i}.tmp" for i in (0, 1)]
    old.append(folder / f".{final.name}.{os.getpid()}.0.tmp.tmp")
    for link in old:
        link.symlink_to(victim)
    _lines(final)
    assert victim.read_bytes() == SECRET
    assert json.loads(gzip.decompress(final.read_bytes())) == {"traceEvents": []}
    assert all(link.is_symlink() for link in old)


def test_the_raw_trace_is_exported_through_a_private_folder(folder: Path,
                                                            victim: Path) -> None:
    seen: list[Path] = []

    class Spy(_FakeProfiler):
        def export_chrome_trace(self, path: str) -> None:
            seen.append(Path(path))
            super().export_chrome_trace(path)

    raw, final = export.export_raw_trace(Spy(), folder, "w")
    assert raw.read_bytes() == b'{"traceEvents": []}' and raw.parent == folder
    private = seen[0].parent
    assert private.parent == folder and private.name.startswith(f".{raw.name}.")
    assert not private.exists()  # removed with torch's own .tmp
    assert sorted(p.name for p in folder.iterdir()) == [raw.name]


def test_temporary_names_are_unguessable_and_found_stale_when_their_writer_is_gone(
        folder: Path) -> None:
    names = {owned.temp_name(folder / "x").name for _ in range(2000)}
    assert len(names) == 2000
    random_parts = {n.split(".")[-2] for n in names}
    assert all(len(part) == 2 * owned.TEMP_RANDOM_BYTES for part in random_parts)
    gone = folder / f".x.raw.{2**22 + 7}.{os.urandom(8).hex()}.tmp"  # above any pid_max
    gone.mkdir()  # a private export folder its killed writer left
    (gone / "x.raw").write_text("partial")
    assert rf.stale_temps(folder) == [gone]
    rf.remove_quietly(gone)
    assert not gone.exists()


def test_removing_a_stale_temporary_link_never_follows_it(folder: Path, victim: Path) -> None:
    link = folder / ".x.1.abcdef.tmp"
    link.symlink_to(victim.parent, target_is_directory=True)
    rf.remove_quietly(link)
    assert not link.is_symlink() and victim.read_bytes() == SECRET


@pytest.mark.parametrize("kind", ["fifo", "link", "too big", "socket", "folder"])
def test_reading_a_cache_takes_only_a_regular_file_and_never_blocks(
        folder: Path, victim: Path, kind: str) -> None:
    path = folder / "t.autoprof.summary.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "link":
        path.symlink_to(victim)
    elif kind == "too big":
        path.write_bytes(b"x" * 101)
    elif kind == "folder":
        path.mkdir()
    else:
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    answer: list[object] = []
    reader = threading.Thread(target=lambda: answer.append(rf.read_regular(path, 100)),
                              daemon=True)
    reader.start()
    reader.join(10)
    assert answer == [None]
    if kind != "too big":  # (a regular file: open_regular opens it, read_regular bounds it)
        assert rf.open_regular(path) is None


def test_reading_a_regular_cache_gives_its_bytes(folder: Path) -> None:
    path = folder / "t.autoprof.rank"
    path.write_bytes(b"x" * 100)
    assert rf.read_regular(path, 100) == b"x" * 100
    assert rf.read_regular(folder / "missing", 100) is None
