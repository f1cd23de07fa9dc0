"""A search log as columns: one row per shown result (an impression), with integer codes for the ids."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from evalcore.errors import EvalCoreError


class ClickLogError(EvalCoreError, ValueError):
    """A log that breaks a rule of `ClickLog`; `row` is the 0-based row at fault (the readers turn it into a
    line of the file)."""

    def __init__(self, row: int, reason: str) -> None:
        self.row = row
        self.reason = reason
        super().__init__(f"row {row}: {reason}")


@dataclass(frozen=True, eq=False)
class ClickLog:
    """Impressions of a search log, one row per result shown in a session (a result page).

    - `session`, `query`, `doc`: int32 codes into `sessions`, `queries` and `docs` (the distinct ids, any sequence of text: the readers decode an id only when it is asked for);
    - `position`: the 1-based rank at which the result was shown;
    - `clicked`: whether it was clicked;
    - `dwell`: seconds spent on a clicked result (NaN where unknown), or None when the log has none.

    Build with `ClickLog.from_codes`, which checks that a session shows one query, and neither a position
    nor a document twice.
    """

    session: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    position: np.ndarray
    clicked: np.ndarray
    dwell: np.ndarray | None
    sessions: Sequence[str]
    queries: Sequence[str]
    docs: Sequence[str]

    @classmethod
    def from_codes(
        cls,
        session: ArrayLike,
        query: ArrayLike,
        doc: ArrayLike,
        position: ArrayLike,
        clicked: ArrayLike,
        *,
        sessions: Sequence[str],
        queries: Sequence[str],
        docs: Sequence[str],
        dwell: ArrayLike | None = None,
    ) -> ClickLog:
        """Check and build; raises `ClickLogError` naming the first row (in row order) at fault."""
        log = cls(
            np.asarray(session, dtype=np.int32),
            np.asarray(query, dtype=np.int32),
            np.asarray(doc, dtype=np.int32),
            np.asarray(position, dtype=np.int64),
            np.asarray(clicked, dtype=bool),
            None if dwell is None else np.asarray(dwell, dtype=np.float64),
            sessions,
            queries,
            docs,
        )
        log._check()
        return log

    @property
    def num_rows(self) -> int:
        return int(self.session.size)

    def _check(self) -> None:
        n = self.num_rows
        lengths = {self.query.size, self.doc.size, self.position.size, self.clicked.size}
        if self.dwell is not None:
            lengths.add(self.dwell.size)
        if lengths != {n}:
            raise ValueError("the columns of a click log must have the same length")
        low = np.flatnonzero(self.position < 1)
        if low.size:
            raise ClickLogError(int(low[0]), f"position {int(self.position[low[0]])} is below 1")
        if self.dwell is not None:
            bad = np.flatnonzero(self.dwell < 0)
            if bad.size:
                raise ClickLogError(int(bad[0]), f"dwell {float(self.dwell[bad[0]])!r} is negative")
        if n < 2:
            return
        first = np.full(len(self.sessions), n, dtype=np.int64)
        np.minimum.at(first, self.session, np.arange(n))
        other = np.flatnonzero(self.query != self.query[first[self.session]])
        if other.size:
            row = int(other[0])
            raise ClickLogError(row, f"session {self.sessions[self.session[row]]!r} shows a second query")
        self._refuse_repeats(self.position, "position")
        self._refuse_repeats(self.doc, "document")

    def _refuse_repeats(self, values: np.ndarray, what: str) -> None:
        """Refuse a session showing a value twice. One int64 key per row: strictly increasing keys (a log
        written session by session, in position order) need no sort; else a sort finds any repeat, and
        only then does a stable argsort find its first row."""
        width = int(values.max()) + 1
        key = self.session.astype(np.int64) * width + values
        if bool(np.all(key[1:] > key[:-1])):
            return
        ordered = np.sort(key)
        if not bool(np.any(ordered[1:] == ordered[:-1])):
            return
        order = np.argsort(key, kind="stable")
        same = key[order[1:]] == key[order[:-1]]
        row = int(order[1:][same].min())
        shown = self.docs[values[row]] if what == "document" else int(values[row])
        session = self.sessions[self.session[row]]
        raise ClickLogError(row, f"session {session!r} shows {what} {shown!r} twice")

    def ranked(self) -> np.ndarray:
        """The row order by session, then position: each session's results in the order shown."""
        if self.num_rows == 0:
            return np.zeros(0, dtype=np.int64)
        key = self.session.astype(np.int64) * (int(self.position.max()) + 1) + self.position
        if bool(np.all(key[1:] > key[:-1])):  # written session by session in position order already
            return np.arange(self.num_rows)
        return np.argsort(key, kind="stable")
