"""Every recommendation metric declared once, and the evaluation of all of them over shared statistics.

`RecsysData` bundles what the metrics read: the lists, and optionally the relevant items, the users'
history, item popularity, categories, features and a baseline. `RecsysStats` computes the sufficient
statistics of one bundle at one cutoff lazily and once (the hits matrix, the exposure vector, the
similarity), so that `evaluate_recommendations` reduces each of them for every metric instead of
recomputing them per metric. A metric whose inputs are missing evaluates to NaN.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from evalcore.metrics import MetricSpec
from evalcore.recsys._accuracy import (
    RelevanceHits,
    hit_rate,
    mean_over_evaluated,
    ndcg_at_k,
    per_user_hit,
    per_user_ndcg,
    per_user_precision,
    per_user_recall,
    precision_at_k,
    recall_at_k,
    relevance_hits,
)
from evalcore.recsys._data import (
    FloatArray,
    IntArray,
    Interactions,
    RecommendationLists,
    RecsysInputError,
    item_values,
    mean_of_list_means,
    mean_over_lists,
    per_list_mean,
)
from evalcore.recsys._diversity import (
    ItemSimilarity,
    baseline_membership,
    intra_list_diversity,
    per_user_intra_list_diversity,
    per_user_serendipity_baseline,
    per_user_serendipity_history,
    per_user_unexpectedness,
    serendipity_baseline,
    serendipity_history,
    unexpectedness,
)
from evalcore.recsys._exposure import (
    catalog_coverage,
    category_coverage,
    category_coverage_from_exposure,
    gini,
    gini_coefficient,
    gini_recommended,
    item_categories,
    unique_items_recommended,
)
from evalcore.recsys._popularity import (
    DEFAULT_HEAD_SHARE,
    average_percentage_long_tail,
    average_recommendation_popularity,
    long_tail_items,
    novelty,
    popularity_bias,
    self_information,
)


@dataclass(frozen=True, eq=False)
class RecsysData:
    """What the recommendation metrics read, coded against one catalog and one set of users.

    - `relevant`: the held-out items each user interacted with (accuracy, serendipity);
    - `history`: what each user interacted with before (unexpectedness, serendipity_history);
    - `popularity`: a value per catalog item, usually its interaction count (ARP, APLT, novelty);
    - `categories`: a category code per item, -1 for none (category coverage; similarity);
    - `features`: an items x d matrix (similarity by cosine, preferred over categories);
    - `baseline`: item codes of one list for everyone, or a `RecommendationLists` per user.
    """

    lists: RecommendationLists
    relevant: Interactions | None = None
    history: Interactions | None = None
    popularity: FloatArray | None = None
    categories: IntArray | None = None
    features: FloatArray | None = None
    baseline: RecommendationLists | IntArray | None = None
    head_share: float = DEFAULT_HEAD_SHARE

    def __post_init__(self) -> None:
        n_items = self.lists.n_items
        for name in ("relevant", "history"):
            pairs = getattr(self, name)
            if pairs is not None:
                pairs.check_matches(self.lists, name=name)
        if self.popularity is not None:
            object.__setattr__(self, "popularity", item_values(self.popularity, n_items, name="popularity"))
        if self.categories is not None:
            object.__setattr__(self, "categories", item_categories(self.categories, n_items))
        if self.features is not None and np.shape(self.features)[0] != n_items:
            raise RecsysInputError(f"features must have one row per catalog item ({n_items})")

    @cached_property
    def similarity(self) -> ItemSimilarity | None:
        if self.features is not None:
            return ItemSimilarity.from_features(self.features)
        if self.categories is not None:
            return ItemSimilarity.from_categories(self.categories)
        return None

    def permuted(self, order: ArrayLike) -> RecsysData:
        """The same data with the users renumbered (every metric must be invariant to this)."""
        baseline = self.baseline
        if isinstance(baseline, RecommendationLists):
            baseline = baseline.permuted(order)
        return replace(
            self,
            lists=self.lists.permuted(order),
            relevant=None if self.relevant is None else self.relevant.permuted(order),
            history=None if self.history is None else self.history.permuted(order),
            baseline=baseline,
        )


class RecsysStats:
    """The sufficient statistics of one `RecsysData` at one cutoff, each computed on first use."""

    def __init__(self, data: RecsysData, *, k: int | None = None) -> None:
        self.data = data
        self.k = k
        self.lists = data.lists.top(k)

    @cached_property
    def hits(self) -> RelevanceHits:
        assert self.data.relevant is not None
        return relevance_hits(self.lists, self.data.relevant, k=self.k)

    @cached_property
    def exposure(self) -> IntArray:
        return self.lists.exposure()

    @cached_property
    def popularity(self) -> FloatArray:
        assert self.data.popularity is not None
        return self.data.popularity

    @cached_property
    def similarity(self) -> ItemSimilarity:
        assert self.data.similarity is not None
        return self.data.similarity

    def list_mean(self, values: FloatArray) -> float:
        return mean_of_list_means(self.lists, values, self.exposure)


# --- reducers: one per metric, over the shared statistics ------------------------------------------


def _coverage(s: RecsysStats) -> float:
    return np.count_nonzero(s.exposure) / s.lists.n_items if s.lists.n_items else float("nan")


def _category_coverage(s: RecsysStats) -> float:
    assert s.data.categories is not None
    return category_coverage_from_exposure(s.exposure, s.data.categories)


def _popularity_bias(s: RecsysStats) -> float:
    if s.exposure.sum() == 0 or s.popularity.sum() == 0:
        return float("nan")
    return float(s.exposure @ s.popularity / s.exposure.sum() / s.popularity.mean())


def _aplt(s: RecsysStats) -> float:
    tail = long_tail_items(s.popularity, head_share=s.data.head_share).astype(np.float64)
    return s.list_mean(tail)


def _serendipity_history(s: RecsysStats) -> float:
    assert s.data.history is not None
    return mean_over_evaluated(
        per_user_serendipity_history(s.hits, s.lists, s.data.history, s.similarity), s.hits
    )


def _serendipity_baseline(s: RecsysStats) -> float:
    assert s.data.baseline is not None
    inside = baseline_membership(s.lists, s.data.baseline)
    return mean_over_evaluated(per_user_serendipity_baseline(s.hits, inside), s.hits)


def _unexpectedness(s: RecsysStats) -> float:
    assert s.data.history is not None
    return mean_over_lists(per_user_unexpectedness(s.lists, s.data.history, s.similarity))


@dataclass(frozen=True)
class RecsysMetric(MetricSpec):
    """A recommendation metric: `kernel` is its public function, `reduce` its value from `RecsysStats`.

    `needs` names the `RecsysData` fields it reads beyond the lists; without them it is NaN.
    """

    needs: tuple[str, ...] = ()
    reduce: Callable[[RecsysStats], float] | None = field(default=None, compare=False, repr=False)

    def available(self, data: RecsysData) -> bool:
        return all(getattr(data, need) is not None for need in self.needs)

    def of_stats(self, stats: RecsysStats) -> float:
        if not self.available(stats.data):
            return float("nan")
        assert self.reduce is not None
        return float(self.reduce(stats))

    def of(self, data: RecsysData, *, k: int | None = None) -> float:
        """The metric's value on `data` at cutoff `k` (the lists' depth when None)."""
        return self.of_stats(RecsysStats(data, k=k))


def _metric(
    name: str,
    label: str,
    kernel: Callable[..., Any],
    reduce: Callable[[RecsysStats], float],
    definition: str,
    *,
    needs: tuple[str, ...] = (),
    direction: str = "higher",
    range: tuple[float | None, float | None] | None = (0.0, 1.0),  # noqa: A002 - MetricSpec's field
    unit: str = "",
) -> RecsysMetric:
    return RecsysMetric(
        name=name, label=label, family="recsys", direction=direction, definition=definition,  # type: ignore[arg-type]
        kernel=kernel, range=range, unit=unit, needs=needs, reduce=reduce,
    )  # fmt: skip


_REL = ("relevant",)
_POP = ("popularity",)
_SIM = ("similarity",)

#: The registry's view of the recommendation family (`evalcore.metrics.metric_registry`).
METRIC_SPECS: tuple[RecsysMetric, ...] = (
    _metric("hit_rate", "Hit rate@k", hit_rate,
            lambda s: mean_over_evaluated(per_user_hit(s.hits), s.hits),
            "Share of users with a relevant item in their top k (over users with a relevant item).", needs=_REL),
    _metric("precision_at_k", "Precision@k", precision_at_k,
            lambda s: mean_over_evaluated(per_user_precision(s.hits), s.hits),
            "Mean over users of |top k ∩ relevant| / k.", needs=_REL),
    _metric("recall_at_k", "Recall@k", recall_at_k,
            lambda s: mean_over_evaluated(per_user_recall(s.hits), s.hits),
            "Mean over users of |top k ∩ relevant| / |relevant|.", needs=_REL),
    _metric("ndcg_at_k", "nDCG@k", ndcg_at_k,
            lambda s: mean_over_evaluated(per_user_ndcg(s.hits), s.hits),
            "Mean over users of DCG@k / ideal DCG@k, binary gains, discount 1 / log2(rank + 1).", needs=_REL),
    _metric("catalog_coverage", "Catalog coverage", catalog_coverage, _coverage,
            "Share of the catalog recommended in at least one top-k list."),
    _metric("unique_items_recommended", "Items recommended", unique_items_recommended,
            lambda s: float(np.count_nonzero(s.exposure)),
            "Number of distinct catalog items in at least one top-k list.", range=(0.0, None), unit="items"),
    _metric("gini", "Gini of exposure", gini, lambda s: gini_coefficient(s.exposure),
            "Gini coefficient of how often each catalog item is recommended, unrecommended items as 0.",
            direction="lower"),
    _metric("gini_recommended", "Gini of exposure (recommended items)", gini_recommended,
            lambda s: gini_coefficient(s.exposure[s.exposure > 0]),
            "Gini coefficient of exposure over the recommended items only (seed 004).", direction="lower"),
    _metric("category_coverage", "Category coverage", category_coverage, _category_coverage,
            "Share of the catalog's categories with an item in some top-k list.", needs=("categories",)),
    _metric("popularity_bias", "Popularity bias (ARP ratio)", popularity_bias, _popularity_bias,
            "Mean popularity of the recommended slots over the catalog's mean popularity (seed 004).",
            needs=_POP, direction="lower", range=(0.0, None)),
    _metric("arp", "Average recommendation popularity", average_recommendation_popularity,
            lambda s: s.list_mean(s.popularity),
            "Mean over users of the mean popularity (interactions) of their top-k items.",
            needs=_POP, direction="lower", range=(0.0, None), unit="interactions"),
    _metric("aplt", "Long-tail share (APLT)", average_percentage_long_tail, _aplt,
            "Mean over users of the share of their top-k items outside the short head.", needs=_POP),
    _metric("novelty", "Novelty", novelty, lambda s: s.list_mean(self_information(s.popularity)),
            "Mean over users of the mean self-information -log2 p(i), p(i) = interactions(i) / total.",
            needs=_POP, range=(0.0, None), unit="bits"),
    _metric("intra_list_diversity", "Intra-list diversity", intra_list_diversity,
            lambda s: mean_over_lists(per_user_intra_list_diversity(s.lists, s.similarity)),
            "Mean over users of the average distance 1 - sim between two items of their top-k list.",
            needs=_SIM, range=(0.0, 2.0)),
    _metric("unexpectedness", "Unexpectedness", unexpectedness, _unexpectedness,
            "Mean over users of each top-k item's distance to the closest item of their history.",
            needs=("history", *_SIM), range=(0.0, 2.0)),
    _metric("serendipity_history", "Serendipity (history)", serendipity_history, _serendipity_history,
            "Mean over users of (1/k) sum of unexpectedness over the relevant top-k items.",
            needs=("relevant", "history", *_SIM), range=(0.0, 2.0)),
    _metric("serendipity_baseline", "Serendipity (baseline)", serendipity_baseline, _serendipity_baseline,
            "Mean over users of the share of top-k slots holding a relevant item the baseline lacks.",
            needs=("relevant", "baseline")),
)  # fmt: skip

METRICS: dict[str, RecsysMetric] = {spec.name: spec for spec in METRIC_SPECS}


#: The metrics that are a mean of per-user values, in the order `per_user_values` returns them.
PER_USER_METRICS: tuple[str, ...] = (
    "hit_rate", "precision_at_k", "recall_at_k", "ndcg_at_k", "arp", "aplt", "novelty", "intra_list_diversity",
)  # fmt: skip


def per_user_values(stats: RecsysStats) -> dict[str, FloatArray]:
    """Each user's value of the metrics that average over users (`PER_USER_METRICS`), NaN where a user
    does not count: accuracy for users without a relevant item, list measures for an empty list. The
    metric is the mean of its non-NaN values, so two sets can be compared user by user (paired tests).
    Metrics whose inputs are missing are left out.

    >>> lists = RecommendationLists.from_matrix([[0, 1], [2, -1]], n_items=3)
    >>> relevant = Interactions.from_codes([0], [1], n_users=2, n_items=3)
    >>> values = per_user_values(RecsysStats(RecsysData(lists, relevant)))
    >>> values["hit_rate"].tolist(), values["precision_at_k"].tolist()
    ([1.0, nan], [0.5, nan])
    """
    data, values = stats.data, {}
    if data.relevant is not None:
        hits, evaluated = stats.hits, stats.hits.evaluated
        for name, kernel in (("hit_rate", per_user_hit), ("precision_at_k", per_user_precision),
                             ("recall_at_k", per_user_recall), ("ndcg_at_k", per_user_ndcg)):  # fmt: skip
            values[name] = np.where(evaluated, kernel(hits), np.nan)
    if data.popularity is not None:
        values["arp"] = per_list_mean(stats.lists, stats.popularity)
        tail = long_tail_items(stats.popularity, head_share=data.head_share).astype(np.float64)
        values["aplt"] = per_list_mean(stats.lists, tail)
        values["novelty"] = per_list_mean(stats.lists, self_information(stats.popularity))
    if data.similarity is not None:
        values["intra_list_diversity"] = per_user_intra_list_diversity(stats.lists, stats.similarity)
    return values


def evaluate_recommendations(
    data: RecsysData, *, k: int | None = None, metrics: Iterable[str] | None = None
) -> dict[str, float]:
    """Every metric (or those named) at cutoff `k`, NaN where its inputs are missing.

    The statistics the metrics share are computed once.
    """
    names = list(METRICS) if metrics is None else list(metrics)
    unknown = [name for name in names if name not in METRICS]
    if unknown:
        raise RecsysInputError(f"unknown recommendation metric {unknown[0]!r}")
    stats = RecsysStats(data, k=k)
    return {name: METRICS[name].of_stats(stats) for name in names}
