"""Agreement over all annotators from per-item value counts.

The sufficient statistic is ``c_u``, the number of labels of each value on item ``u``
(a row of the items x values count matrix, built with one ``bincount``), summed
over the *pairable* items, those with ``m_u >= 2`` labels:

- the pair counts ``Q = sum_u (c_u c_u^T - diag(c_u))``: ``Q[c, k]`` is the
  number of ordered within-item label pairs valued ``(c, k)``;
- Krippendorff's coincidence matrix ``o = sum_u (c_u c_u^T - diag(c_u)) / (m_u - 1)``;
- the Fleiss sum ``sum_u P_u`` with ``P_u = (sum_c c_uc^2 - m_u) / (m_u (m_u - 1))``;
- the counts of pairable and unanimous items.

Both matrices are two ``(values x items) @ (items x values)`` products. Every
measure is then a few operations on these sums, so the sums of disjoint shards
of items add up (``AgreementStats.merge``) and a bootstrap resample is a
weighted sum of per-item contributions (``_bootstrap``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, NamedTuple, TypeAlias

import numpy as np
from numpy.typing import ArrayLike

from evalcore.agreement._labels import LongLabels, dense_is_small
from evalcore.metrics import MetricSpec
from evalcore.stats._validation import FloatArray, IntArray, StatsInputError, check_choice

if TYPE_CHECKING:  # scipy.sparse costs a fifth of a second to import; only many distinct values need it
    import scipy.sparse as sp

Level: TypeAlias = Literal["nominal", "ordinal", "interval", "ratio"]
LEVELS: tuple[Level, ...] = ("nominal", "ordinal", "interval", "ratio")

# The coincidence and pair-count matrices are values x values; beyond this, bin the labels first.
MAX_VALUES = 4096


class Sums(NamedTuple):
    """The additive sufficient statistics, with optional leading batch axes (one per bootstrap resample)."""

    coincidence: FloatArray  # (..., K, K)
    pair_counts: FloatArray  # (..., K, K)
    n_pairable: FloatArray  # (...)
    n_unanimous: FloatArray  # (...)
    fleiss_sum: FloatArray  # (...)


@dataclass(frozen=True, eq=False)
class AgreementStats:
    """The mergeable sufficient statistics of every all-annotator agreement measure.

    ``values`` is the sorted value domain; ``coincidence`` (Krippendorff's ``o``)
    and ``pair_counts`` (``Q``) are ``len(values)`` square and symmetric. Items
    with fewer than two labels (``n_items - n_pairable`` of them) contribute to
    nothing. ``min_labels`` / ``max_labels`` are the fewest and most labels on a
    pairable item (0 when there is none); Fleiss' classic kappa assumes they are
    equal.

    Stats of disjoint sets of items merge with ``a.merge(b)`` or ``a + b``; an
    item's labels must all be in the same part.

    >>> stats = AgreementStats.from_value_counts([[2, 0], [1, 1], [0, 3]], values=[0, 1])
    >>> stats.coincidence.tolist()
    [[2.0, 1.0], [1.0, 3.0]]
    >>> print(f"{stats.krippendorff_alpha('nominal'):.4f} {stats.exact_agreement():.4f}")
    0.5000 0.6667
    """

    values: FloatArray
    coincidence: FloatArray
    pair_counts: FloatArray
    n_items: int
    n_pairable: int
    n_unanimous: int
    fleiss_sum: float
    min_labels: int
    max_labels: int

    @classmethod
    def from_value_counts(cls, value_counts: ArrayLike, *, values: ArrayLike | None = None) -> AgreementStats:
        """Stats from an items x values table of label counts (statsmodels' ``aggregate_raters`` table).

        ``values`` defaults to ``0 .. n_columns - 1``, as in ``krippendorff.alpha(value_counts=...)``.
        """
        table = np.asarray(value_counts, dtype=np.float64)
        if table.ndim != 2:
            raise StatsInputError(
                f"value_counts must be two-dimensional (items x values), got shape {table.shape}"
            )
        if not (np.isfinite(table).all() and (table >= 0).all() and np.array_equal(table, np.round(table))):
            raise StatsInputError("value_counts must hold non-negative integer counts")
        domain = (
            np.arange(table.shape[1], dtype=np.float64) if values is None else np.asarray(values, np.float64)
        )
        if domain.shape != (table.shape[1],) or np.any(np.diff(domain) <= 0):
            raise StatsInputError("values must be increasing, one per column of value_counts")
        return _stats_from_counts(table, table.sum(axis=1), domain, n_items=table.shape[0])

    # --- the measures ------------------------------------------------------------------------------

    def krippendorff_alpha(self, level: Level = "ordinal") -> float:
        """Krippendorff's alpha at a level of measurement; see ``krippendorff_alpha``."""
        return float(_alpha(self.sums(), self.values, check_level(level)))

    def fleiss_kappa(self) -> float:
        """Fleiss' kappa; see ``fleiss_kappa``."""
        return float(_fleiss(self.sums()))

    def exact_agreement(self) -> float:
        """Share of pairable items on which all labels are equal; see ``exact_agreement``."""
        return float(_exact(self.sums()))

    def pairwise_agreement(self, *, tolerance: float = 0.0) -> float:
        """Share of within-item label pairs that agree within ``tolerance``; see ``pairwise_agreement``."""
        return float(_pairwise(self.sums(), self.values, tolerance=tolerance))

    @property
    def n_pairable_values(self) -> float:
        """Krippendorff's ``n``: the number of labels on pairable items."""
        return float(self.coincidence.sum())

    # --- merging -----------------------------------------------------------------------------------

    def merge(self, other: AgreementStats) -> AgreementStats:
        """The stats of the union of two disjoint sets of items, over the union of their values."""
        values = np.union1d(self.values, other.values)
        return AgreementStats(
            values=values,
            coincidence=_embed(self.coincidence, self.values, values)
            + _embed(other.coincidence, other.values, values),
            pair_counts=_embed(self.pair_counts, self.values, values)
            + _embed(other.pair_counts, other.values, values),
            n_items=self.n_items + other.n_items,
            n_pairable=self.n_pairable + other.n_pairable,
            n_unanimous=self.n_unanimous + other.n_unanimous,
            fleiss_sum=self.fleiss_sum + other.fleiss_sum,
            min_labels=min(self.min_labels or other.min_labels, other.min_labels or self.min_labels),
            max_labels=max(self.max_labels, other.max_labels),
        )

    def __add__(self, other: AgreementStats) -> AgreementStats:
        return self.merge(other)

    def sums(self) -> Sums:
        """The sums as 0-d arrays, the input of the ``MEASURES`` kernels."""
        return Sums(
            self.coincidence,
            self.pair_counts,
            np.asarray(self.n_pairable, dtype=np.float64),
            np.asarray(self.n_unanimous, dtype=np.float64),
            np.asarray(self.fleiss_sum, dtype=np.float64),
        )


def agreement_stats(labels: LongLabels) -> AgreementStats:
    """The sufficient statistics of ``labels``, from the items x values count matrix.

    The count matrix is dense when it has at most a few cells per label and a
    ``scipy.sparse`` CSR matrix otherwise, so memory stays O(n_labels).
    """
    if labels.n_values > MAX_VALUES:
        raise StatsInputError(
            f"labels take {labels.n_values} distinct values; agreement needs at most {MAX_VALUES} (bin them first)"
        )
    counts = item_value_counts(labels)
    return _stats_from_counts(counts, labels.labels_per_item, labels.values, n_items=labels.n_items)


def item_value_counts(labels: LongLabels) -> FloatArray | sp.csr_matrix:
    """The items x values matrix of label counts ``c_u``: dense if small, else CSR."""
    n_values = labels.n_values
    if dense_is_small(labels.n_items * n_values, labels.n_labels):
        flat = np.bincount(labels.item * n_values + labels.code, minlength=labels.n_items * n_values)
        return flat.reshape(labels.n_items, n_values).astype(np.float64)
    import scipy.sparse as sp

    return sp.csr_matrix(
        (np.ones(labels.n_labels), (labels.item, labels.code)), shape=(labels.n_items, n_values)
    )


def krippendorff_alpha(labels: LongLabels, *, level: Level = "ordinal") -> float:
    """Krippendorff's alpha, ``1 - D_o / D_e``, at a level of measurement.

    With the coincidence matrix ``o`` (see the module docstring), its marginals
    ``n_c = sum_k o_ck`` and ``n = sum_c n_c``::

        alpha = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck

    where the squared difference ``d_ck`` is, for the levels of Krippendorff
    (2011, "Computing Krippendorff's Alpha-Reliability"): nominal ``[c != k]``;
    ordinal ``(sum_{g=c..k} n_g - (n_c + n_k) / 2)^2``, which is
    ``(r_k - r_c)^2`` for the mid-ranks ``r_c = sum_{g<=c} n_g - n_c / 2``;
    interval ``(c - k)^2``; ratio ``((c - k) / (c + k))^2`` (0 when ``c + k = 0``).

    Only pairable values count: items with one label are dropped, as
    Krippendorff defines. This equals ``krippendorff.alpha(reliability_data=
    labels.to_matrix().T, level_of_measurement=level)`` (to 1e-9). Alpha is
    undefined (``NaN``) when the pairable labels take a single value or there
    is no pairable item (``D_e = 0``), where that package raises ``ValueError``.

    >>> labels = LongLabels.from_matrix([[1, 1, 2], [3, 3, 3], [2, 2, float("nan")], [0, 1, 0]])
    >>> print(f"{krippendorff_alpha(labels, level='nominal'):.4f} {krippendorff_alpha(labels, level='interval'):.4f}")
    0.5556 0.8551
    """
    return agreement_stats(labels).krippendorff_alpha(level)


def krippendorff_alpha_from_coincidence(
    coincidence: ArrayLike, *, values: ArrayLike | None = None, level: Level = "ordinal"
) -> float:
    """Krippendorff's alpha of a coincidence matrix ``o`` (``K x K``, symmetric), as in ``krippendorff_alpha``.

    ``values`` are the label values of the rows (default ``0 .. K - 1``). Use it
    to recompute alpha from a stored or merged ``AgreementStats.coincidence``.

    >>> print(round(krippendorff_alpha_from_coincidence([[2, 1], [1, 3]], level="nominal"), 4))
    0.5
    """
    o = np.asarray(coincidence, dtype=np.float64)
    if o.ndim != 2 or o.shape[0] != o.shape[1] or not np.allclose(o, o.T):
        raise StatsInputError(f"coincidence must be a square symmetric matrix, got shape {o.shape}")
    domain = np.arange(o.shape[0], dtype=np.float64) if values is None else np.asarray(values, np.float64)
    if domain.shape != (o.shape[0],) or np.any(np.diff(domain) <= 0):
        raise StatsInputError("values must be increasing, one per row of the coincidence matrix")
    empty = np.zeros((), dtype=np.float64)
    return float(_alpha(Sums(o, o, empty, empty, empty), domain, check_level(level)))


def fleiss_kappa(labels: LongLabels) -> float:
    """Fleiss' kappa, ``(P - P_e) / (1 - P_e)``, over the items with at least two labels.

    ``P_u = (sum_c c_uc^2 - m_u) / (m_u (m_u - 1))`` is the agreeing share of
    the label pairs of item ``u``, ``P`` their plain mean over the pairable
    items, and ``P_e = sum_c p_c^2`` with ``p_c`` the share of value ``c``
    among those items' labels. With the same number of labels on every item
    this is Fleiss (1971) and equals ``statsmodels.stats.inter_rater.
    fleiss_kappa(table)``; with varying ``m_u`` it is the same formula with
    each item's own ``m_u`` (statsmodels asserts a constant count instead).
    ``NaN`` when all labels are equal (``P_e = 1``) or no item is pairable.
    """
    return agreement_stats(labels).fleiss_kappa()


def exact_agreement(labels: LongLabels) -> float:
    """Share of the items with at least two labels on which all labels are equal (``NaN`` if none)."""
    return agreement_stats(labels).exact_agreement()


def pairwise_agreement(labels: LongLabels, *, tolerance: float = 0.0) -> float:
    """Share of agreeing label pairs among all within-item label pairs, pooled over items.

    ``sum_u #{pairs i < j of item u: |x_ui - x_uj| <= tolerance} / sum_u m_u (m_u - 1) / 2``:
    an item with more labels weighs more (its per-item mean is Fleiss' ``P``).
    ``tolerance=0`` counts equal labels; ``tolerance=1`` counts pairs within ±1.
    """
    return agreement_stats(labels).pairwise_agreement(tolerance=tolerance)


def check_level(level: str) -> Level:
    return check_choice(level, name="level", choices=LEVELS)  # type: ignore[return-value]


# --- kernels on (possibly batched) sums -----------------------------------------------------------


def _alpha(sums: Sums, values: FloatArray, level: Level) -> FloatArray:
    o = sums.coincidence
    marginals = o.sum(axis=-1)
    n = marginals.sum(axis=-1)
    distance = _squared_difference(values, marginals, level)
    observed = (o * distance).sum(axis=(-2, -1))
    expected = np.einsum("...c,...ck,...k->...", marginals, distance, marginals)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def _squared_difference(values: FloatArray, marginals: FloatArray, level: Level) -> FloatArray:
    if level == "nominal":
        return 1.0 - np.eye(values.size)
    if level == "ordinal":
        ranks = np.cumsum(marginals, axis=-1) - marginals / 2.0
        return (ranks[..., :, None] - ranks[..., None, :]) ** 2
    difference = values[:, None] - values[None, :]
    if level == "interval":
        return difference**2
    total = values[:, None] + values[None, :]
    ratio = np.divide(difference, total, out=np.zeros_like(difference), where=total != 0)
    return ratio**2


def _fleiss(sums: Sums) -> FloatArray:
    marginals = sums.coincidence.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = marginals / marginals.sum(axis=-1, keepdims=True)
        chance = (shares * shares).sum(axis=-1)
        observed = sums.fleiss_sum / sums.n_pairable
        kappa = (observed - chance) / (1.0 - chance)
    return np.where((sums.n_pairable > 0) & (chance < 1.0), kappa, np.nan)


def _exact(sums: Sums) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sums.n_pairable > 0, sums.n_unanimous / sums.n_pairable, np.nan)


def _pairwise(sums: Sums, values: FloatArray, *, tolerance: float = 0.0) -> FloatArray:
    close = np.abs(values[:, None] - values[None, :]) <= tolerance
    pairs = sums.pair_counts.sum(axis=(-2, -1))
    agreeing = (sums.pair_counts * close).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(pairs > 0, agreeing / pairs, np.nan)


# One definition per measure; the facade, the report and the bootstrap all read this registry.
MeasureKernel: TypeAlias = Callable[[Sums, FloatArray, Level], FloatArray]
MEASURES: dict[str, MeasureKernel] = {
    "exact_agreement": lambda sums, values, level: _exact(sums),
    "pairwise_agreement": lambda sums, values, level: _pairwise(sums, values),
    "pairwise_agreement_within_1": lambda sums, values, level: _pairwise(sums, values, tolerance=1.0),
    "fleiss_kappa": lambda sums, values, level: _fleiss(sums),
    "krippendorff_alpha": _alpha,
}


@dataclass(frozen=True)
class AgreementMetric(MetricSpec):
    """An all-annotator agreement metric: a kernel of `MEASURES` at a Krippendorff level."""

    measure: str = ""
    level: Level = "ordinal"

    def of(self, stats: AgreementStats) -> float:
        """The metric's value from the sufficient statistics."""
        return float(MEASURES[self.measure](stats.sums(), stats.values, self.level))


def _agreement_metric(name: str, label: str, definition: str, *, measure: str = "", level: Level = "ordinal",
                      low: float | None = 0.0) -> AgreementMetric:  # fmt: skip
    measure = measure or name
    return AgreementMetric(
        name=name, label=label, family="agreement", direction="higher", definition=definition,
        kernel=MEASURES[measure], range=(low, 1.0), measure=measure, level=level,
    )  # fmt: skip


_ALPHA = (
    "Krippendorff's alpha, 1 - observed / expected disagreement with {} differences; handles missing labels."
)
#: The registry's view of the agreement family (`evalcore.metrics.metric_registry`).
METRIC_SPECS: tuple[AgreementMetric, ...] = (
    _agreement_metric("exact_agreement", "Exact agreement",
                      "Share of items with two or more labels on which every label is equal."),
    _agreement_metric("pairwise_agreement", "Pairwise agreement",
                      "Share of pairs of labels of the same item that are equal."),
    _agreement_metric("pairwise_agreement_within_1", "Pairwise agreement within ±1",
                      "Share of pairs of labels of the same item that differ by at most 1."),
    _agreement_metric("fleiss_kappa", "Fleiss' kappa", "(P_o - P_e) / (1 - P_e) over items, "
                      "with chance agreement P_e from the pooled label shares.", low=-1.0),
    _agreement_metric("krippendorff_alpha_nominal", "Krippendorff's alpha, nominal", _ALPHA.format("equal/unequal"),
                      measure="krippendorff_alpha", level="nominal", low=None),
    _agreement_metric("krippendorff_alpha_ordinal", "Krippendorff's alpha, ordinal", _ALPHA.format("rank"),
                      measure="krippendorff_alpha", level="ordinal", low=None),
    _agreement_metric("krippendorff_alpha_interval", "Krippendorff's alpha, interval",
                      _ALPHA.format("squared"), measure="krippendorff_alpha", level="interval", low=None),
    _agreement_metric("krippendorff_alpha_ratio", "Krippendorff's alpha, ratio", _ALPHA.format("ratio"),
                      measure="krippendorff_alpha", level="ratio", low=None),
)  # fmt: skip


# --- building the sums ----------------------------------------------------------------------------


def _stats_from_counts(
    counts: FloatArray | sp.csr_matrix,
    labels_per_item: IntArray | FloatArray,
    values: FloatArray,
    *,
    n_items: int,
) -> AgreementStats:
    m = np.asarray(labels_per_item, dtype=np.float64)
    pairable = m >= 2
    if not pairable.all():
        counts = counts[pairable]
        m = m[pairable]
    weight = 1.0 / (m - 1.0)
    if isinstance(counts, np.ndarray):
        pair_counts = counts.T @ counts
        weighted = (counts * weight[:, None]).T @ counts
        sum_squares = np.einsum("uc,uc->u", counts, counts)
        totals = counts.sum(axis=0)
        weighted_totals = counts.T @ weight
    else:
        pair_counts = np.asarray((counts.T @ counts).toarray())
        weighted = np.asarray((counts.T @ counts.multiply(weight[:, None]).tocsr()).toarray())
        sum_squares = np.asarray(counts.multiply(counts).sum(axis=1)).ravel()
        totals = np.asarray(counts.sum(axis=0)).ravel()
        weighted_totals = np.asarray(counts.T @ weight).ravel()
    pair_counts[np.diag_indices_from(pair_counts)] -= totals
    weighted[np.diag_indices_from(weighted)] -= weighted_totals
    return AgreementStats(
        values=np.asarray(values, dtype=np.float64),
        coincidence=weighted,
        pair_counts=pair_counts,
        n_items=int(n_items),
        n_pairable=int(m.size),
        # sum_c c_uc^2 <= m_u^2, with equality exactly when a single value holds all the labels.
        n_unanimous=int(np.count_nonzero(sum_squares == m * m)),
        fleiss_sum=float(((sum_squares - m) / (m * (m - 1.0))).sum()),
        min_labels=int(m.min()) if m.size else 0,
        max_labels=int(m.max()) if m.size else 0,
    )


def _embed(matrix: FloatArray, values: FloatArray, domain: FloatArray) -> FloatArray:
    index = np.searchsorted(domain, values)
    embedded = np.zeros((domain.size, domain.size))
    embedded[np.ix_(index, index)] = matrix
    return embedded
