"""Key-group state held on nodes, and direct state migration between them.

Each node holds a map per key group it hosts: window -> entry key -> [sum, count]. A key group's
state lives on exactly one node; `update` refuses to touch it elsewhere, so a placement that
forgot to migrate state fails loudly instead of silently starting from zero. `migrate` is the
paper's direct state migration: serialize on the old node, deserialize on the new one (a real
round trip through bytes, so nothing is shared), then the old copy is gone.

State size is modelled, not measured: entries x the operator's entry size, so that it is the
same on every machine and Python version (pickle sizes are not).
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator, Sequence

import numpy as np

__all__ = ["StateStore", "WindowMap"]

WindowMap = dict[int, dict[int, list[float]]]


class StateStore:
    """All key-group state of one job, by node."""

    def __init__(self) -> None:
        self._nodes: dict[str, dict[int, WindowMap]] = {}
        self._where: dict[int, str] = {}

    def node_of(self, gid: int) -> str | None:
        return self._where.get(gid)

    def _maps(self, gid: int, node: str) -> WindowMap:
        where = self._where.get(gid)
        if where is None:
            self._where[gid] = node
            maps: WindowMap = {}
            self._nodes.setdefault(node, {})[gid] = maps
            return maps
        if where != node:
            raise RuntimeError(
                f"key group {gid} is placed on {node} but its state is on {where}: "
                "a migration was skipped"
            )
        return self._nodes[node][gid]

    def update(
        self,
        placement: Sequence[str],
        gids: np.ndarray,
        windows: np.ndarray,
        entries: np.ndarray,
        sums: np.ndarray,
        counts: np.ndarray,
    ) -> None:
        """Add (sum, count) to each (key group, window, entry); `placement[gid]` is its node."""
        for g, w, e, s, c in zip(
            gids.tolist(), windows.tolist(), entries.tolist(), sums.tolist(), counts.tolist(),
            strict=True,
        ):
            window = self._maps(g, placement[g]).setdefault(w, {})
            cell = window.get(e)
            if cell is None:
                window[e] = [s, c]
            else:
                cell[0] += s
                cell[1] += c

    def pop_windows(self, gid: int, closed: Callable[[int], bool]) -> WindowMap:
        """Remove and return the key group's windows for which `closed(window)` holds."""
        where = self._where.get(gid)
        if where is None:
            return {}
        maps = self._nodes[where][gid]
        done = sorted(w for w in maps if closed(w))
        return {w: maps.pop(w) for w in done}

    def add(self, gid: int, node: str, window: int, entry: int, total: float, count: float) -> None:
        """Fold one partial entry into the key group's state (PoTC merge at window end)."""
        cell = self._maps(gid, node).setdefault(window, {}).get(entry)
        if cell is None:
            self._nodes[node][gid][window][entry] = [total, count]
        else:
            cell[0] += total
            cell[1] += count

    def holders(self) -> dict[str, tuple[int, ...]]:
        """Node -> the key groups whose state maps it holds (for invariant checks)."""
        return {node: tuple(sorted(maps)) for node, maps in sorted(self._nodes.items()) if maps}

    def entries(self, gid: int) -> int:
        where = self._where.get(gid)
        if where is None:
            return 0
        return sum(len(w) for w in self._nodes[where][gid].values())

    def migrate(self, gid: int, src: str, dst: str) -> int:
        """Move a key group's state from `src` to `dst`; the serialized size in bytes."""
        where = self._where.get(gid)
        if where is None:
            self._where[gid] = dst
            self._nodes.setdefault(dst, {})[gid] = {}
            return 0
        if where != src:
            raise RuntimeError(f"key group {gid}: state is on {where}, not on {src}")
        blob = pickle.dumps(self._nodes[src].pop(gid), protocol=pickle.HIGHEST_PROTOCOL)
        self._nodes.setdefault(dst, {})[gid] = pickle.loads(blob)
        self._where[gid] = dst
        return len(blob)

    def items(self) -> Iterator[tuple[int, int, int, float, float]]:
        """Every entry as (gid, window, entry, sum, count), in a fixed order."""
        for gid in sorted(self._where):
            maps = self._nodes[self._where[gid]][gid]
            for w in sorted(maps):
                for e in sorted(maps[w]):
                    total, count = maps[w][e]
                    yield gid, w, e, total, count

    def snapshot(self) -> dict[str, np.ndarray]:
        rows = list(self.items())
        cols = list(zip(*rows, strict=True)) if rows else [(), (), (), (), ()]
        return {
            "gid": np.asarray(cols[0], dtype=np.int64),
            "window": np.asarray(cols[1], dtype=np.int64),
            "entry": np.asarray(cols[2], dtype=np.int64),
            "sum": np.asarray(cols[3], dtype=np.float64),
            "count": np.asarray(cols[4], dtype=np.float64),
        }

    @classmethod
    def restore(cls, snapshot: dict[str, np.ndarray], placement: Sequence[str]) -> StateStore:
        """A store holding `snapshot`, each key group's state on the node `placement` names."""
        store = cls()
        store.update(placement, snapshot["gid"], snapshot["window"], snapshot["entry"],
                     snapshot["sum"], snapshot["count"])
        return store
