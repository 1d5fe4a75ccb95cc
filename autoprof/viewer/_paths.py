"""Where the viewer may read: the chosen traces folder and nothing outside it.

Every path the viewer opens is resolved (symlinks followed) and must lie inside the resolved
traces folder; a path that escapes it, directly or through a link, is refused.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from autoprof import env
from autoprof.runfolder import confine


class OutsideFolderError(ValueError):
    """A path that resolves outside the traces folder."""


class SpecialFileError(ValueError):
    """A FIFO, socket or device where a trace or manifest should be."""


def default_root() -> Path:
    """AUTOPROF_DIR if set, else ./traces (relative to the current directory)."""
    return env.out_dir()


def resolve_root(text: str | os.PathLike[str]) -> Path:
    """The traces folder as an absolute, link-free path (it may not exist yet).

    `~` is not expanded, as the recording side (autoprof.env.out_dir) does not expand it
    either: `AUTOPROF_DIR='~/traces'` is the folder `./~/traces` for both (a shell expands an
    unquoted `~` before either sees it)."""
    return Path(text).resolve(strict=False)


def inside(root: Path, candidate: str | os.PathLike[str]) -> Path:
    """`candidate` (relative paths are taken from `root`) resolved; refused if outside `root`.

    Raises FileNotFoundError if it does not exist, OutsideFolderError if it (or a link on the
    way) leads outside the traces folder.
    """
    root_real = root.resolve(strict=True)
    path = Path(candidate)
    if not path.is_absolute():
        path = root_real / path
    real = path.resolve(strict=True)
    if real != root_real and root_real not in real.parents:
        raise OutsideFolderError(f"{candidate}: outside the traces folder {root_real}")
    return real


def check_tree(root: Path, folder: Path) -> None:
    """Refuse a run folder holding any file or link that resolves outside `root`, or any
    special file (a FIFO would block the reader's `open()`; a device never ends).

    Every entry is checked, however many there are: a cap would let a link placed after
    it (a what-if `fixed_run` pointing out of the folder) through. Links to folders are
    checked as entries, not followed."""
    inside(root, folder)
    regular_only(folder)
    if not folder.is_dir():
        return
    for entry in _entries(folder):
        try:
            real = inside(root, entry)
        except FileNotFoundError as e:  # dangling link
            raise OutsideFolderError(f"{entry}: broken link") from e
        regular_only(real)


def _entries(folder: Path) -> Iterator[Path]:
    """Every file, folder and link below `folder`, without following links."""
    for parent, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            yield Path(parent) / name


def regular_only(path: Path) -> None:
    """Raise SpecialFileError unless `path` is a plain file or a folder (checked by stat,
    before anything opens it)."""
    kind = confine.special_kind(path.stat().st_mode)  # the readers' one rule
    if kind is not None:
        raise SpecialFileError(f"{path}: is {kind}, not a regular file")
