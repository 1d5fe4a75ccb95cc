"""How scripts/test.sh hands the suite's files to its two xdist workers
(support/xdist_scopes.py): the longest files (support/tiers.py FIRST_FILES) go out first,
although xdist orders its queue by the number of tests of each file."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support.tiers import FIRST_FILES
from support.xdist_scopes import EVERY_COMMITTED_RUN, SHARED_SCOPES, FileScopes, scope_of

REPO = Path(__file__).resolve().parents[1]


class _Config:
    """What xdist's scheduler reads of the config: two popen workers, its default reorder."""

    class option:
        loadscopereorder = True

    def getvalue(self, name: str) -> Any:
        return {"tx": ["2*popen"]}[name]


class _Node:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(indices)

    def shutdown(self) -> None:
        self.shutting_down = True


def _collection() -> list[str]:
    """Many small files of many tests each (xdist would hand them out first), then the
    longest files with few tests each, in the order of the collection."""
    many = [f"tests/fake/test_many_{i}.py::test_{j}" for i in range(6) for j in range(30)]
    few = [f"{path}::test_{j}" for path in FIRST_FILES for j in range(3)]
    return many + few


def test_the_longest_files_are_handed_out_first_in_their_order() -> None:
    scheduler = FileScopes(_Config())  # type: ignore[arg-type]
    nodes = [_Node("gw0"), _Node("gw1")]
    collection = _collection()
    for node in nodes:
        scheduler.add_node(node)  # type: ignore[arg-type]
        scheduler.add_node_collection(node, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    first = [scope_of(collection[n.sent[0][0]].split("::")[0]) for n in nodes]
    head = list(dict.fromkeys(scope_of(f) for f in FIRST_FILES))
    assert first == head[:2]  # one long unit each, before any file of many tests
    assert head[1] == EVERY_COMMITTED_RUN  # the shared files' unit is one of them
    handed = [scope_of(collection[i].split("::")[0]) for n in nodes for batch in n.sent
              for i in batch]
    shared = [i for i, s in enumerate(handed) if s == EVERY_COMMITTED_RUN]
    assert len(shared) == 3 * sum(f in SHARED_SCOPES for f in FIRST_FILES)
    assert "tests/fake/test_many_0.py" in scheduler.workqueue  # the rest waits its turn
    assert list(scheduler.workqueue)[:len(head) - 2] == head[2:]


def test_every_file_named_first_exists() -> None:
    missing = [f for f in FIRST_FILES if not (REPO / f).is_file()]
    assert not missing
