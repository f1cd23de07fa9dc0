"""A run scored on a machine judge's labels and on people's: its PPI estimate, and the leaderboards' tau."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from evalcore.arrow import from_numpy, take
from evalcore.machine_judges._ppi import Estimand, PPIComparison, ppi_compare
from evalcore.retrieval import NoCommonQueriesError, Qrels, Run, evaluate, parse_measure
from evalcore.retrieval.data import lookup
from evalcore.retrieval.names import MeasureSpec
from evalcore.stats import kendall_tau, tau_ap
from evalcore.stats._validation import FloatArray, StatsInputError


class QueriesNotJudgedError(StatsInputError):
    """Human-judged queries the machine did not judge: they are not a sample of the machine's queries."""


@dataclass(frozen=True, eq=False)
class RankingAgreement:
    """Each run's mean ``measure`` on the humans' and on the machine's labels, and Kendall's tau-b
    between the two rankings, and Yilmaz, Aslam and Robertson's AP correlation of the machine's ranking
    against the humans' (``tau_ap``: swaps at the top cost more). None where undefined: fewer than two
    runs, or all tied."""

    names: tuple[str, ...]
    measure: str
    human_scores: FloatArray
    machine_scores: FloatArray
    kendall_tau: float | None
    tau_ap: float | None
    topics: int


def ranking_agreement(
    runs: Sequence[Run],
    human: Qrels,
    machine: Qrels,
    *,
    measure: str = "ndcg_cut_10",
    rel_level: int = 1,
    names: Sequence[str] | None = None,
) -> RankingAgreement:
    """Rank ``runs`` by ``measure`` on each judge's labels, over the topics both judged, and compare.

    Both leaderboards average over the same topics (those in both qrels), counting a topic a run
    lacks as 0 (trec_eval ``-c``), so that only the labels differ. Tau is ``evalcore.stats.kendall_tau``.
    """
    if not runs:
        raise StatsInputError("ranking agreement needs at least one run")
    labels = (
        tuple(names)
        if names is not None
        else tuple(run.run_id or f"run {i + 1}" for i, run in enumerate(runs))
    )
    if len(labels) != len(runs):
        raise StatsInputError(f"{len(labels)} names for {len(runs)} runs")
    shared = np.intersect1d(human.qids, machine.qids)
    if not shared.size:
        raise StatsInputError("the human and the machine labels share no topic")
    human_scores = _scores(runs, _restricted(human, shared), measure, rel_level)
    machine_scores = _scores(runs, _restricted(machine, shared), measure, rel_level)
    return RankingAgreement(labels, measure, human_scores, machine_scores, kendall_tau(human_scores, machine_scores),
                            tau_ap(human_scores, machine_scores), int(shared.size))  # fmt: skip


def is_query_mean(measure: str) -> bool:
    """Whether ``measure`` is one measure averaged over queries (``map``, ``P_10``, ``ndcg_cut_10``),
    the kind PPI estimates; False for ``num_rel``, ``gm_map``, text measures and unknown names.

    >>> is_query_mean("ndcg_cut_10"), is_query_mean("gm_map"), is_query_mean("no such measure")
    (True, False, False)
    """
    try:
        specs = parse_measure(measure)
    except Exception:  # an unknown name: not a measure PPI can average
        return False
    return _one_query_mean(specs)


def _one_query_mean(specs: Sequence[MeasureSpec]) -> bool:
    """Whether parsed measure specs are one measure averaged over queries."""
    return len(specs) == 1 and specs[0].measure.aggregate == "mean" and not specs[0].measure.text


def per_query_scores(
    run: Run, qrels: Qrels, measure: str, *, rel_level: int = 1
) -> tuple[np.ndarray, FloatArray]:
    """``(qids, values)``: ``measure`` of ``run`` on every query of ``qrels``, sorted by id, a query the
    run lacks counting as 0 (trec_eval ``-c``). Only measures averaged over queries have a per-query
    value to average (``map``, ``P_10``, ``ndcg_cut_10``; not ``num_rel`` or ``gm_map``).
    """
    specs = parse_measure(measure)  # an unknown name fails here, with the closest known names
    if not _one_query_mean(specs):
        raise StatsInputError(
            f"{measure}: give one measure averaged over queries, such as map or ndcg_cut_10"
        )
    try:
        result = evaluate(qrels, run, [measure], rel_level=rel_level, complete=True)
    except NoCommonQueriesError:
        return qrels.qids, np.zeros(len(qrels.qids))
    return result.per_query_array(specs[0].key)


def ppi_evaluate(
    run: Run,
    machine: Qrels,
    human: Qrels,
    measure: str,
    *,
    alpha: float = 0.05,
    rel_level: int = 1,
    estimand: Estimand = "population",
) -> PPIComparison:
    """A run's mean ``measure`` over every query the machine judged, estimated with PPI (``ppi_compare``).

    The queries of ``human`` must be a random sample of the machine's, each judged completely by
    people: their per-query values on the human labels are ``Y``, on the machine's ``f``.
    """
    machine_qids, f_all = per_query_scores(run, machine, measure, rel_level=rel_level)
    human_qids, y = per_query_scores(run, human, measure, rel_level=rel_level)
    at = lookup(machine_qids, human_qids)
    if (at < 0).any():
        missing = human_qids[at < 0]
        raise QueriesNotJudgedError(
            f"{missing.size} human-judged quer{'y is' if missing.size == 1 else 'ies are'} not among the "
            f"machine's (first: {missing[0]!r}); the human queries must be a sample of the machine's"
        )
    return ppi_compare(f_all, y, f_all[at], alpha=alpha, estimand=estimand)


def ppi_evaluate_measures(
    run: Run,
    machine: Qrels,
    human: Qrels,
    measures: Sequence[str],
    *,
    alpha: float = 0.05,
    rel_level: int = 1,
    estimand: Estimand = "population",
) -> dict[str, PPIComparison]:
    """``ppi_evaluate`` for several measures at once: ``{measure: PPIComparison}``, the same values, with
    one evaluation of the run on each qrels (a leaderboard's runs times its measures)."""
    if not measures:
        return {}
    machine_qids, f_all = _per_query_table(run, machine, measures, rel_level)
    human_qids, y = _per_query_table(run, human, measures, rel_level)
    at = lookup(machine_qids, human_qids)
    if (at < 0).any():
        missing = human_qids[at < 0]
        raise QueriesNotJudgedError(
            f"{missing.size} human-judged quer{'y is' if missing.size == 1 else 'ies are'} not among the "
            f"machine's (first: {missing[0]!r}); the human queries must be a sample of the machine's"
        )
    return {
        name: ppi_compare(f_all[name], y[name], f_all[name][at], alpha=alpha, estimand=estimand)
        for name in measures
    }


def _per_query_table(
    run: Run, qrels: Qrels, measures: Sequence[str], rel_level: int
) -> tuple[np.ndarray, dict[str, FloatArray]]:
    """``(qids, {measure: values})`` on every query of ``qrels`` (``per_query_scores``, one evaluation)."""
    for name in measures:
        if not is_query_mean(name):
            raise StatsInputError(f"{name}: give measures averaged over queries, such as map or ndcg_cut_10")
    try:
        result = evaluate(qrels, run, list(measures), rel_level=rel_level, complete=True)
    except NoCommonQueriesError:
        return qrels.qids, {name: np.zeros(len(qrels.qids)) for name in measures}
    table = {name: result.per_query_array(parse_measure(name)[0].key) for name in measures}
    qids = next(iter(table.values()))[0]
    return qids, {name: values for name, (_, values) in table.items()}


def queries_restricted(qrels: Qrels, qids: Sequence[str] | np.ndarray) -> Qrels:
    """The judgments of ``qrels`` on the queries ``qids`` only (the human sample of a PPI estimate)."""
    return _restricted(qrels, np.asarray(sorted(set(map(str, qids))), dtype=qrels.qids.dtype))


def _restricted(qrels: Qrels, qids: np.ndarray) -> Qrels:
    keep = np.flatnonzero(lookup(qids, qrels.qids)[qrels.qid_codes] >= 0)
    if keep.size == len(qrels):
        return qrels
    # Not `Qrels.take`, whose `pa.array` of the rows imports pandas (a quarter of a second) in a file command.
    docnos = take(qrels.docnos, from_numpy(keep.astype(np.int64)))
    return Qrels.from_codes(qrels.qids, qrels.qid_codes[keep], docnos, qrels.rels[keep])


def _scores(runs: Sequence[Run], qrels: Qrels, measure: str, rel_level: int) -> FloatArray:
    # One evaluation per run: runs are few, pairs many.
    return np.asarray([per_query_scores(run, qrels, measure, rel_level=rel_level)[1].mean() for run in runs])
