"""How much the annotators decide the system ranking (Voorhees 2000).

Voorhees ("Variations in relevance judgments and the measurement of retrieval effectiveness", IPM 36(5),
2000) re-scored the TREC systems on each assessor's judgments alone and found the system ranking stable
(Kendall's tau about 0.9 against the official one) although the assessors agreed on relevance far less.
Here the same question is asked of a qrels build made from several labels per pair:

- *bootstrap over annotators*: in each of B resamples every pair p with labels l_p1..l_pm keeps m labels
  drawn from its own with replacement; the pair's grade is re-aggregated as the build did (median
  rounded down, mean rounded half up, majority with ties to the lower grade; Dawid-Skene as below), an
  adjudicated pair keeps its adjudicated grade, and every run is re-scored on the resampled qrels;
- *each annotator alone*: for an annotator who labelled at least `min_coverage` of the pairs, the pairs
  they labelled take their grade (their last one if they gave several) and the others keep the
  published grade.

A Dawid-Skene build's resamples are aggregated by Dawid-Skene's E-step with one model: the annotators'
confusion matrices pi[a, k, l] and the class priors are fitted once (`evalcore.aggregation.dawid_skene`)
on the build's stored labels, and each resampled pair takes the class of largest posterior

    log prior[k] + sum over its drawn labels j of log pi[a_j, k, l_j]      (ties: the lower class)

where a drawn label keeps its annotator, so an annotator drawn twice counts twice (the model's
independence of labels given the truth). The build itself fitted the model on every used label (the
pairs it dropped too) anchored by the gold labels; neither is stored with its judgments, so this model is
the build's refitted on what it kept, without the anchor.

The build's agreement filter (at least `min_labels` labels spanning at most `tolerance` grades) is not
applied again, because it cannot change anything the build stored: a kept pair's resample has as many
labels as the pair, drawn from labels whose spread is within the tolerance, so its own spread is too and
the filter keeps every resample of every kept pair; and the pairs the build dropped for disagreement are
not among its judgments (their labels are not stored), so no resample can bring one back.

For each resample b the system ranking is compared with the published one (scores on the published
grades) by Kendall's tau-b (`evalcore.stats.kendall_tau`); the report gives the mean and the percentile
interval of tau over resamples and, for each pair of runs (i, j) ranked apart in the published scores,
the swap rate

    swap(i, j) = |{b : sign(s_b(i) - s_b(j)) != sign(s(i) - s(j))}| / B

Vectorised: the B resamples are drawn as one (B, labels) matrix of label indices, re-aggregated in one
call over B x pairs items (`evalcore.aggregation.aggregate_labels`), and scored in batches: each run is
joined to the pairs once (`evalcore.retrieval.ranking.build_context`, trec_eval's semantics), and a batch
of resamples is one stacked ranking context whose queries are (resample, query), scored by the measure's
kernel in one call (`score_grade_sets`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from evalcore.aggregation import aggregate_labels, dawid_skene
from evalcore.agreement import LongLabels
from evalcore.retrieval import Qrels, Run, parse_measure
from evalcore.retrieval.evaluation import compute
from evalcore.retrieval.ranking import RankingContext, build_context
from evalcore.stats import kendall_tau

#: Judged hits and judgments (resamples x per run) that one stacked context may hold.
MAX_STACKED_ROWS = 4_000_000

ProgressFn = Callable[[float, str], None]


@dataclass(frozen=True)
class SensitivityParams:
    """The resampling: how many resamples, the seed, the interval, the measure, the per-annotator
    coverage threshold (share of the pairs), and the build's aggregation."""

    n_resamples: int = 200
    seed: int = 0
    confidence: float = 0.95
    measure: str = "map"
    rel_level: int = 1
    min_coverage: float = 0.5
    aggregation: str = "median"

    def __post_init__(self) -> None:
        if self.n_resamples < 1:
            raise ValueError("take at least one resample")
        if not 0 < self.confidence < 1:
            raise ValueError("the confidence must be between 0 and 1")
        if not 0 < self.min_coverage <= 1:
            raise ValueError("the coverage threshold must be a share of the pairs, in (0, 1]")
        if self.aggregation not in ("median", "mean", "majority", "dawid_skene"):
            raise ValueError(f"unknown aggregation {self.aggregation!r}")
        if len(parse_measure(self.measure)) != 1:
            raise ValueError(f"{self.measure} names several measures; name one")


@dataclass(frozen=True, eq=False)
class PairLabels:
    """A build's pairs and the labels each was aggregated from.

    `qids`, `doc_ids`, `rel` (the published grade) and `fixed` (an adjudicated grade, NaN where none)
    are aligned per pair; `label_pair`, `label_annotator` (codes into `annotators`) and `label_grade`
    per label, sorted by pair.
    """

    qids: np.ndarray
    doc_ids: np.ndarray
    rel: np.ndarray
    fixed: np.ndarray
    label_pair: np.ndarray
    label_annotator: np.ndarray
    label_grade: np.ndarray
    annotators: np.ndarray

    @classmethod
    def from_judgments(
        cls, rows: Sequence[tuple[str, str, int, Sequence[Mapping[str, object]]]]
    ) -> PairLabels:
        """From (qid, doc_id, rel, labels) rows as a build stores them: each label a dict with
        `annotator` and `grade`; an entry marked `"source": "adjudication"` fixes the pair's grade."""
        qids, docs, rels, fixed = [], [], [], []
        pair, who, grade = [], [], []
        for p, (qid, doc, rel, labels) in enumerate(rows):
            qids.append(qid)
            docs.append(doc)
            rels.append(int(rel))
            adjudicated = float("nan")
            for entry in labels:
                if entry.get("source") == "adjudication":
                    adjudicated = float(entry.get("grade", rel))  # type: ignore[arg-type]
                    continue
                pair.append(p)
                who.append(str(entry.get("annotator", "")))
                grade.append(float(entry["grade"]))  # type: ignore[arg-type]
            fixed.append(adjudicated)
        annotators, codes = (
            np.unique(np.asarray(who, dtype=object), return_inverse=True)
            if who
            else (
                np.zeros(0, dtype=object),
                np.zeros(0, dtype=np.int64),
            )
        )
        order = np.argsort(np.asarray(pair, dtype=np.int64), kind="stable")
        return cls(
            qids=np.asarray(qids, dtype=object),
            doc_ids=np.asarray(docs, dtype=object),
            rel=np.asarray(rels, dtype=np.int64),
            fixed=np.asarray(fixed, dtype=np.float64),
            label_pair=np.asarray(pair, dtype=np.int64)[order],
            label_annotator=np.asarray(codes, dtype=np.int64).reshape(-1)[order],
            label_grade=np.asarray(grade, dtype=np.float64)[order],
            annotators=annotators.astype(object),
        )

    @property
    def n_pairs(self) -> int:
        return int(self.qids.size)


@dataclass(frozen=True)
class SensitivityReport:
    runs: list[str]
    published: np.ndarray  # (R,) scores on the published grades
    resampled: np.ndarray  # (B, R) scores per bootstrap resample
    taus: np.ndarray  # (B,) Kendall's tau-b against the published ranking (NaN where undefined)
    swap_rate: np.ndarray  # (R, R) share of resamples where i and j swap
    annotators: list[dict[str, object]]  # per annotator alone: name, coverage, tau, scores
    params: SensitivityParams

    @property
    def tau_mean(self) -> float | None:
        finite = self.taus[np.isfinite(self.taus)]
        return float(finite.mean()) if finite.size else None

    @property
    def tau_interval(self) -> tuple[float, float] | None:
        finite = self.taus[np.isfinite(self.taus)]
        if not finite.size:
            return None
        tail = (1 - self.params.confidence) / 2 * 100
        low, high = np.percentile(finite, [tail, 100 - tail])
        return float(low), float(high)

    def swaps(self) -> list[dict[str, object]]:
        """Each pair of runs (i < j) with its swap rate, the most often swapped first."""
        n = len(self.runs)
        i, j = np.triu_indices(n, k=1)
        order = np.argsort(-self.swap_rate[i, j], kind="stable")
        return [
            {"run_a": self.runs[a], "run_b": self.runs[b], "swap_rate": float(self.swap_rate[a, b])}
            for a, b in zip(i[order].tolist(), j[order].tolist(), strict=True)
        ]

    def as_dict(self) -> dict[str, object]:
        interval = self.tau_interval
        return {
            "measure": self.params.measure,
            "n_resamples": self.params.n_resamples,
            "seed": self.params.seed,
            "confidence": self.params.confidence,
            "aggregation": self.params.aggregation,
            "runs": self.runs,
            "published": [float(v) for v in self.published],
            "tau_mean": self.tau_mean,
            "tau_interval": None if interval is None else list(interval),
            "taus": [None if not np.isfinite(t) else float(t) for t in self.taus],
            "swaps": self.swaps(),
            "annotators": self.annotators,
        }


# --- resampling ------------------------------------------------------------------------------------


def bootstrap_grades(pairs: PairLabels, *, n_resamples: int, seed: int, aggregation: str) -> np.ndarray:
    """(B, pairs) grades: each pair's labels resampled with replacement and re-aggregated; a pair
    without labels, or an adjudicated one, keeps its published (adjudicated) grade."""
    rng = np.random.default_rng(seed)
    n = pairs.n_pairs
    m = np.bincount(pairs.label_pair, minlength=n)
    starts = np.concatenate([[0], np.cumsum(m)[:-1]]).astype(np.int64)
    pair_of = pairs.label_pair
    draw = np.floor(rng.random((n_resamples, pair_of.size)) * m[pair_of]).astype(np.int64)
    picked = starts[pair_of][None, :] + draw  # (B, L) indices into the labels
    grades = pairs.label_grade[picked]
    item = (np.arange(n_resamples, dtype=np.int64)[:, None] * n + pair_of[None, :]).ravel()
    # A resample may draw one annotator twice: each drawn label is its own "annotator" (its slot in the
    # pair), which the median, the mean and the majority ignore.
    slot = np.arange(pair_of.size, dtype=np.int64) - starts[pair_of]
    if aggregation == "dawid_skene":
        scores = _dawid_skene_resampled(pairs, picked)
    else:
        scores = _aggregated(pairs, item, slot, grades, n_resamples, int(m.max(initial=1)), aggregation)
    out = np.floor(scores + 0.5)  # the build rounds the mean half up; the others give grades already
    keep = ~np.isfinite(out)
    out[keep] = np.broadcast_to(pairs.rel.astype(np.float64), out.shape)[keep]
    fixed = np.isfinite(pairs.fixed)
    out[:, fixed] = pairs.fixed[fixed]
    return out.astype(np.int64)


def _aggregated(
    pairs: PairLabels,
    item: np.ndarray,
    slot: np.ndarray,
    grades: np.ndarray,
    n_resamples: int,
    n_slots: int,
    method: str,
) -> np.ndarray:
    """(B, pairs) median, mean or majority of the drawn labels, in one call over B x pairs items."""
    n = pairs.n_pairs
    labels = LongLabels.from_codes(
        item,
        np.tile(slot, n_resamples),
        grades.ravel(),
        n_items=n * n_resamples,
        n_annotators=max(1, n_slots),
    )
    return np.asarray(aggregate_labels(labels, method=method), dtype=np.float64).reshape(n_resamples, n)  # type: ignore[arg-type]


def _dawid_skene_resampled(pairs: PairLabels, picked: np.ndarray) -> np.ndarray:
    """(B, pairs) Dawid-Skene classes of the resampled labels (`picked`: (B, L) indices into the labels)
    under the model fitted once on all the labels (see the module docstring); NaN for a pair without
    labels. One bincount over B x pairs items per class."""
    n, (n_resamples, n_drawn) = pairs.n_pairs, picked.shape
    if not n_drawn:
        return np.full((n_resamples, n), np.nan)
    fit = dawid_skene(
        LongLabels.from_codes(
            pairs.label_pair, pairs.label_annotator, pairs.label_grade,
            n_items=n, n_annotators=max(1, pairs.annotators.size),
        )
    )  # fmt: skip
    code = np.searchsorted(fit.classes, pairs.label_grade)[picked]  # (B, L)
    annotator = pairs.label_annotator[picked]
    item = (np.arange(n_resamples, dtype=np.int64)[:, None] * n + pairs.label_pair[picked]).ravel()
    with np.errstate(divide="ignore"):  # a class of prior 0 is impossible; every drawn label was seen
        log_confusion, log_priors = np.log(fit.confusion), np.log(fit.priors)
    log_joint = np.empty((n_resamples * n, fit.classes.size))
    for k in range(fit.classes.size):  # a loop over classes, each a bincount over every drawn label
        log_joint[:, k] = log_priors[k] + np.bincount(
            item, weights=log_confusion[annotator, k, code].ravel(), minlength=n_resamples * n
        )
    out = fit.classes[np.argmax(log_joint, axis=1)].reshape(n_resamples, n)  # argmax: the lower class on ties
    out[:, np.bincount(pairs.label_pair, minlength=n) == 0] = np.nan
    return out


def annotator_grades(pairs: PairLabels, *, min_coverage: float) -> tuple[list[tuple[str, float]], np.ndarray]:
    """The annotators who cover at least `min_coverage` of the pairs, with their coverage, and (K, pairs)
    grades: theirs where they labelled the pair (the last label), the published grade elsewhere."""
    n = pairs.n_pairs
    k = pairs.annotators.size
    if not n or not k:
        return [], np.zeros((0, n), dtype=np.int64)
    covered = np.zeros((k, n), dtype=bool)
    covered[pairs.label_annotator, pairs.label_pair] = True
    coverage = covered.sum(axis=1) / n
    chosen = np.flatnonzero(coverage >= min_coverage)
    grades = np.broadcast_to(pairs.rel, (k, n)).copy()
    grades[pairs.label_annotator, pairs.label_pair] = pairs.label_grade.astype(np.int64)  # last label wins
    fixed = np.isfinite(pairs.fixed)
    grades[:, fixed] = pairs.fixed[fixed].astype(np.int64)
    return [(str(pairs.annotators[a]), float(coverage[a])) for a in chosen], grades[chosen]


# --- scoring ---------------------------------------------------------------------------------------


def score_grade_sets(
    pairs: PairLabels,
    grades: np.ndarray,
    runs: Sequence[Run],
    *,
    measure: str,
    rel_level: int = 1,
    progress: ProgressFn | None = None,
) -> np.ndarray:
    """(K, R) scores of every run on each of K qrels (the pairs with row k of `grades`), K batched.

    Every trec_eval measure depends on a ranking only through where the judged documents landed
    (`evalcore.retrieval.ranking.RankingContext`), and the K qrels judge the same pairs: only their grades
    differ. So each run is joined to the pairs once, with each pair's index in place of its grade, and a
    batch of grade sets becomes one context whose query k:q is query q under grades k (the hits repeated,
    their grades looked up in each set); the measure's kernel then scores the whole batch in one call.
    """
    specs = parse_measure(measure)
    if len(specs) != 1:
        raise ValueError(f"{measure} names {len(specs)} measures; name one")
    spec = specs[0]
    if spec.measure.kernel is None or spec.measure.aggregate not in _AGGREGATES:
        raise ValueError(f"{measure} has no per-query value to re-score")
    k_total = grades.shape[0]
    out = np.full((k_total, len(runs)), np.nan)
    if not pairs.n_pairs:
        return out
    qvocab, qcode = np.unique(pairs.qids.astype(str), return_inverse=True)
    index = Qrels.from_codes(qvocab, qcode, list(pairs.doc_ids.astype(str)), np.arange(pairs.n_pairs))
    for r, run in enumerate(runs):
        base = build_context(index, run)  # rels are pair indices: where each hit's grade is
        if base.num_queries == 0:  # the run answers none of the judged queries: no score
            continue
        per_batch = max(1, min(k_total, MAX_STACKED_ROWS // max(1, len(base.hit_rel) + len(base.judged_rel))))
        for start in range(0, k_total, per_batch):
            stop = min(k_total, start + per_batch)
            ctx = _stacked_context(base, grades[start:stop])
            values = compute(ctx, (spec,), rel_level)[spec.key].reshape(stop - start, base.num_queries)
            out[start:stop, r] = _AGGREGATES[spec.measure.aggregate](values)
        if progress is not None:
            progress((r + 1) / len(runs), f"re-scored {r + 1} of {len(runs)} runs")
    return out


_AGGREGATES = {
    "mean": lambda v: v.mean(axis=1),
    "sum": lambda v: v.sum(axis=1),
    "relevant": lambda v: v.sum(axis=1),
    "gmean": lambda v: np.exp(v.mean(axis=1)),  # the kernels give logs; exp of their mean (trec_eval)
}


def _stacked_context(base: RankingContext, grades: np.ndarray) -> RankingContext:
    """The context of `base` repeated for each row of `grades` (K, pairs), query k:q at k * Q + q."""
    k, nq = grades.shape[0], base.num_queries
    offset = np.arange(k, dtype=np.int64)[:, None] * nq
    hits = base.hit_rel  # pair indices
    judged = base.judged_rel
    return RankingContext(
        qids=np.arange(k * nq),
        num_ret=np.tile(base.num_ret, k),
        hit_query=(offset + base.hit_query[None, :]).ravel(),
        hit_rank=np.tile(base.hit_rank, k),
        hit_rel=grades[:, hits].ravel(),
        judged_query=(offset + base.judged_query[None, :]).ravel(),
        judged_rel=grades[:, judged].ravel(),
        missing_qids=base.missing_qids,
        num_qrels_queries=k * base.num_qrels_queries,
        qrels_rels=grades.ravel(),
        run_id=base.run_id,
        hit_score=np.tile(base.hit_score, k),
    )


def _tau(published: np.ndarray, scores: np.ndarray) -> float:
    if not np.all(np.isfinite(scores)) or not np.all(np.isfinite(published)):
        return float("nan")
    tau = kendall_tau(published, scores)
    return float("nan") if tau is None else float(tau)


def swap_rates(published: np.ndarray, resampled: np.ndarray) -> np.ndarray:
    """(R, R) share of resamples in which runs i and j are ordered otherwise than in `published`
    (pairs tied in `published` count a swap whenever the resample separates them)."""
    truth = np.sign(published[:, None] - published[None, :])
    signs = np.sign(resampled[:, :, None] - resampled[:, None, :])
    return np.mean(signs != truth[None, :, :], axis=0)


def annotator_sensitivity(
    pairs: PairLabels,
    runs: Mapping[str, Run],
    *,
    params: SensitivityParams = SensitivityParams(),
    progress: ProgressFn | None = None,
) -> SensitivityReport:
    """Bootstrap over each pair's annotators, and each annotator alone; see the module docstring."""
    names = list(runs)
    run_list = [runs[n] for n in names]
    boot = bootstrap_grades(
        pairs, n_resamples=params.n_resamples, seed=params.seed, aggregation=params.aggregation
    )
    alone, alone_grades = annotator_grades(pairs, min_coverage=params.min_coverage)
    grade_sets = np.vstack([pairs.rel[None, :], boot, alone_grades]).astype(np.int64)
    scores = score_grade_sets(
        pairs, grade_sets, run_list, measure=params.measure, rel_level=params.rel_level, progress=progress
    )
    published, resampled, per_annotator = (
        scores[0],
        scores[1 : 1 + params.n_resamples],
        scores[1 + params.n_resamples :],
    )
    taus = np.array([_tau(published, row) for row in resampled])
    return SensitivityReport(
        runs=names,
        published=published,
        resampled=resampled,
        taus=taus,
        swap_rate=swap_rates(published, resampled),
        annotators=[
            {
                "annotator": name,
                "coverage": coverage,
                "tau": None if not np.isfinite(t := _tau(published, row)) else t,
                "scores": [None if not np.isfinite(v) else float(v) for v in row],
            }
            for (name, coverage), row in zip(alone, per_annotator, strict=True)
        ],
        params=params,
    )
