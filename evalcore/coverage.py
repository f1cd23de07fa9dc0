"""How far a run's top ranks are judged: the coverage measures every evaluation stores, and the unjudged
pairs of a run's top k (the "gaps" a judging project can be asked to fill).

Coverage is read from the one registry: ``Judged@k`` (ir-measures' definition, |judged documents in the
top k| / min(k, n), n the documents retrieved) at k = 10 and 100. The unjudged share of the top k is its
complement, ``1 - Judged@k``, per query and so in the mean. A run whose Judged@10 is under
``JUDGED_WARNING`` is scored on too few judgments for its precision-oriented measures to be trusted
(Buckley and Voorhees 2004: measures of incomplete judgments drift once the top ranks are unjudged).

>>> COVERAGE_MEASURES
('Judged@10', 'Judged@100')
>>> unjudged_share(0.75)
0.25
>>> coverage_warning(0.85), coverage_warning(0.95), coverage_warning(None)
(True, False, False)
"""

from __future__ import annotations

import numpy as np

from evalcore.pools import pool_run
from evalcore.retrieval.data import Qrels, Run

#: The coverage measures every evaluation computes besides the ones asked for.
COVERAGE_MEASURES: tuple[str, ...] = ("Judged@10", "Judged@100")
#: The measure a leaderboard warns on, and the share under which it warns.
WARNING_MEASURE = "Judged@10"
JUDGED_WARNING = 0.9
#: How deep "judge the gaps" reads a run by default.
DEFAULT_GAP_DEPTH = 10


def unjudged_share(judged: float | None) -> float | None:
    """The unjudged share of the top k, from Judged@k (None stays None)."""
    return None if judged is None else 1.0 - judged


def coverage_warning(judged_at_10: float | None) -> bool:
    """Whether a run's Judged@10 is under the threshold (an unknown value warns of nothing)."""
    return judged_at_10 is not None and judged_at_10 < JUDGED_WARNING


def unjudged_pairs(run: Run, qrels: Qrels, *, depth: int = DEFAULT_GAP_DEPTH) -> list[tuple[str, str]]:
    """The (qid, docno) pairs of the run's top `depth` per query (trec_eval's order: score descending,
    docno descending on ties) that `qrels` does not judge, by query then rank. Queries the qrels lack
    count too: none of their documents is judged.

    A judgment with a negative grade (trec_eval's "pooled but unjudged") still counts as judged here, as it
    does in Judged@k: the pair was in the pool.

    >>> run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 1.0}})
    >>> qrels = Qrels.from_dict({"q1": {"b": 1}})
    >>> unjudged_pairs(run, qrels, depth=2)
    [('q1', 'a'), ('q2', 'x')]
    """
    top = pool_run(run, depth)
    if not top:
        return []
    qids = np.array([pair[0] for pair in top], dtype=object)
    docnos = np.array([pair[1] for pair in top], dtype=object)
    judged_qids = np.asarray(qrels.qids, dtype=object)[np.asarray(qrels.qid_codes)]
    judged = np.char.add(
        np.char.add(judged_qids.astype(str), "\t"), np.asarray(qrels.docno_strings(), dtype=str)
    )
    keys = np.char.add(np.char.add(qids.astype(str), "\t"), docnos.astype(str))
    missing = ~np.isin(keys, judged) if judged.size else np.ones(len(top), dtype=bool)
    return [top[i] for i in np.flatnonzero(missing).tolist()]
