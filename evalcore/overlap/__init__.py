"""How different two runs' ranked lists are, per query and on average.

Jaccard@k, rank-biased overlap (RBO_min, RBO_res, RBO_ext; Webber, Moffat and Zobel 2010) and
Kendall's tau / tau_ap over the documents both lists share. Runs are ranked as trec_eval ranks them
(score descending, then document id descending) and cut at depth k; the kernels work on (queries x k)
matrices of document ids (`evalcore.overlap._measures` holds the formulas). Framework-free.

>>> from evalcore.retrieval import Run
>>> a = Run.from_dict({"q1": {"d1": 3, "d2": 2, "d3": 1}, "q2": {"d1": 1, "d2": 0}})
>>> b = Run.from_dict({"q1": {"d1": 3, "d3": 2, "d2": 1}, "q2": {"d3": 1, "d4": 0}})
>>> result = run_overlap(a, b, OverlapParams(k=3, p=0.9))
>>> result.qids.tolist(), result.jaccard.tolist()
(['q1', 'q2'], [1.0, 0.0])
>>> round(result.mean("rbo_ext"), 4), result.mean("kendall_tau")
(0.4775, 0.3333333333333333)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from evalcore.overlap._lists import PAD, RankedLists, ranked_lists
from evalcore.overlap._measures import (
    RankCorrelations,
    RBOBounds,
    jaccard,
    matched_ranks,
    overlap_at_depth,
    rank_correlations,
    rbo,
)
from evalcore.retrieval import Run

__all__ = [
    "MEASURES",
    "PAD",
    "OverlapParams",
    "RankCorrelations",
    "RankedLists",
    "RBOBounds",
    "RunOverlap",
    "jaccard",
    "matched_ranks",
    "overlap_at_depth",
    "rank_correlations",
    "ranked_lists",
    "rbo",
    "run_overlap",
]

#: Per-query figures, in output order.
MEASURES = ("jaccard", "rbo_min", "rbo_res", "rbo_ext", "kendall_tau", "tau_ap", "tau_ap_symmetric")


@dataclass(frozen=True, slots=True)
class OverlapParams:
    """Depth k of each list and RBO's persistence p."""

    k: int = 10
    p: float = 0.9

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be at least 1, not {self.k}")
        if not 0.0 < self.p < 1.0:
            raise ValueError(f"the RBO persistence p must lie strictly between 0 and 1, not {self.p}")


@dataclass(frozen=True, slots=True)
class RunOverlap:
    """Per-query overlap figures of two runs over the queries both answer (NaN where undefined)."""

    params: OverlapParams
    qids: np.ndarray
    shared: np.ndarray  # documents both top-k lists hold
    values: dict[str, np.ndarray]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]

    def __getattr__(self, name: str) -> np.ndarray:
        if name in MEASURES:
            return self.values[name]
        raise AttributeError(name)

    def mean(self, measure: str) -> float:
        """The mean over the queries where `measure` is defined; NaN when it is nowhere."""
        values = self.values[measure]
        defined = values[~np.isnan(values)]
        return float(defined.mean()) if len(defined) else math.nan

    def defined(self, measure: str) -> int:
        """How many queries the mean of `measure` is over."""
        return int(np.count_nonzero(~np.isnan(self.values[measure])))


def run_overlap(a: Run, b: Run, params: OverlapParams | None = None) -> RunOverlap:
    """Every overlap figure of two runs' top-k lists, per common query."""
    params = params or OverlapParams()
    lists = ranked_lists(a, b, depth=params.k)
    bounds = rbo(lists.a, lists.b, p=params.p)
    ranks = rank_correlations(lists.a, lists.b)
    values = {
        "jaccard": jaccard(lists.a, lists.b),
        "rbo_min": bounds.rbo_min,
        "rbo_res": bounds.rbo_res,
        "rbo_ext": bounds.rbo_ext,
        "kendall_tau": ranks.kendall_tau,
        "tau_ap": ranks.tau_ap,
        "tau_ap_symmetric": ranks.tau_ap_symmetric,
    }
    return RunOverlap(params, lists.qids, ranks.shared, values, lists.only_a, lists.only_b)
