"""Search logs simulated from known click-model parameters: for tests (parameter recovery), the
benchmark and the demo. Vectorised over sessions; the DBN walk loops over positions only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalcore.clicks._log import ClickLog


class NumberedNames(Sequence[str]):
    """`prefix0`, `prefix1`, ...: the names of `count` simulated ids, made when asked for."""

    def __init__(self, prefix: str, count: int) -> None:
        self.prefix = prefix
        self.size = count

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index):  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.size))]
        if not -self.size <= index < self.size:
            raise IndexError(index)
        return f"{self.prefix}{index % self.size}"


@dataclass(frozen=True, eq=False)
class SimulatedLog:
    """The log, and the truth it was drawn from: per document (code in `log.docs`) its attractiveness
    and satisfaction, per position (index 0 = position 1) PBM's examination, and DBN's continuation."""

    log: ClickLog
    attractiveness: np.ndarray
    satisfaction: np.ndarray
    examination: np.ndarray
    continuation: float


def simulate_log(
    *,
    model: str,
    sessions: int,
    queries: int = 100,
    docs_per_query: int = 20,
    depth: int = 10,
    continuation: float = 0.7,
    seed: int = 0,
) -> SimulatedLog:
    """A log of `sessions` result pages of `depth` results each, drawn by `model` (`pbm` or `dbn`).

    Each session picks a query at random and shows `depth` of its `docs_per_query` documents in a random
    order (so that every document is seen at many positions, which is what lets a click model tell
    position from relevance). Attractiveness and satisfaction are drawn from Beta(1, 2) and Beta(2, 2);
    PBM's examination falls as 1 / position (1 at the top).
    """
    if model not in ("pbm", "dbn"):
        raise ValueError("simulate_log draws from pbm or dbn")
    if depth > docs_per_query:
        raise ValueError("depth must not exceed docs_per_query")
    rng = np.random.default_rng(seed)
    n_docs = queries * docs_per_query
    attract = rng.beta(1.0, 2.0, n_docs)
    satisfy = rng.beta(2.0, 2.0, n_docs)
    examination = 1.0 / np.arange(1, depth + 1)
    query = rng.integers(0, queries, sessions).astype(np.int32)
    picks = np.argsort(rng.random((sessions, docs_per_query), dtype=np.float32), axis=1)[:, :depth]
    doc = (query[:, None].astype(np.int64) * docs_per_query + picks).astype(np.int32)
    draws = rng.random((sessions, depth), dtype=np.float32)
    if model == "pbm":
        clicked = draws < examination[None, :] * attract[doc]
    else:
        clicked = _dbn_walk(rng, draws, attract[doc], satisfy[doc], continuation)
    log = ClickLog.from_codes(
        np.repeat(np.arange(sessions, dtype=np.int32), depth),
        np.repeat(query, depth),
        doc.ravel(),
        np.tile(np.arange(1, depth + 1), sessions),
        clicked.ravel(),
        sessions=NumberedNames("s", sessions),
        queries=NumberedNames("q", queries),
        docs=NumberedNames("d", n_docs),
    )
    return SimulatedLog(log, attract, satisfy, examination, continuation)


def _dbn_walk(
    rng: np.random.Generator, draws: np.ndarray, attract: np.ndarray, satisfy: np.ndarray, continuation: float
) -> np.ndarray:
    sessions, depth = draws.shape
    examined = np.ones(sessions, dtype=bool)
    clicked = np.zeros((sessions, depth), dtype=bool)
    for r in range(depth):
        clicked[:, r] = examined & (draws[:, r] < attract[:, r])
        satisfied = clicked[:, r] & (rng.random(sessions, dtype=np.float32) < satisfy[:, r])
        examined &= ~satisfied & (rng.random(sessions, dtype=np.float32) < continuation)
    return clicked
