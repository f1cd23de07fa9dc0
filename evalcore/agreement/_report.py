"""All the project-level agreement figures at once, as the ``eval_agreement`` command prints them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numpy.typing import NDArray

from evalcore.agreement._cohen import PairConfusion, pair_confusion
from evalcore.agreement._labels import LongLabels
from evalcore.agreement._stats import AgreementStats, Level, agreement_stats, check_level
from evalcore.stats._validation import FloatArray


@dataclass(frozen=True, eq=False)
class AgreementReport:
    """Agreement over a set of labels, with the sufficient statistics it was computed from.

    ``cohen_kappa`` maps ``"unweighted"``, ``"linear"`` and ``"quadratic"`` to
    the annotators x annotators kappa matrix (rows and columns in ``annotators``
    order; ``NaN`` on the diagonal and for pairs without a shared item).
    """

    n_items: int
    n_annotators: int
    n_labels: int
    level: Level
    exact_agreement: float
    pairwise_agreement: float
    fleiss_kappa: float
    krippendorff_alpha: float
    annotators: NDArray[Any]
    cohen_kappa: dict[str, FloatArray]
    stats: AgreementStats
    confusion: PairConfusion


def agreement_report(labels: LongLabels, *, level: Level = "ordinal") -> AgreementReport:
    """Exact and pairwise agreement, Fleiss' kappa, Krippendorff's alpha at ``level`` and the Cohen's kappa matrices."""
    level = check_level(level)
    stats = agreement_stats(labels)
    confusion = pair_confusion(labels)
    return AgreementReport(
        n_items=labels.n_items,
        n_annotators=labels.n_annotators,
        n_labels=labels.n_labels,
        level=level,
        exact_agreement=stats.exact_agreement(),
        pairwise_agreement=stats.pairwise_agreement(),
        fleiss_kappa=stats.fleiss_kappa(),
        krippendorff_alpha=stats.krippendorff_alpha(level),
        annotators=labels.annotators,
        cohen_kappa={
            "unweighted": confusion.kappa_matrix(weights=None),
            "linear": confusion.kappa_matrix(weights="linear"),
            "quadratic": confusion.kappa_matrix(weights="quadratic"),
        },
        stats=stats,
        confusion=confusion,
    )
