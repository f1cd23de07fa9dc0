"""Inter-annotator agreement: how far several annotators' labels of the same items agree.

Every function takes a ``LongLabels`` (one row per (item, annotator) label,
integer-encoded; missing labels are absent rows) built from records, integer
codes, an items x annotators matrix with NaN, or a CSV file
(``read_annotations_csv``). Options are keyword-only. The kernels are
vectorised over items and annotator pairs, and memory is O(n_labels): no
items x annotators matrix is ever built.

- All annotators at once, from the mergeable ``AgreementStats`` (per-item
  value counts summed into a coincidence matrix and a pair-count matrix):
  ``exact_agreement``, ``pairwise_agreement``, ``fleiss_kappa`` and
  ``krippendorff_alpha`` (nominal, ordinal, interval, ratio), matching
  statsmodels and the ``krippendorff`` package.
- Every annotator pair, from the mergeable ``PairConfusion`` (one confusion
  matrix per pair, counted with one ``bincount``): ``cohen_kappa_matrix``
  (unweighted, linear, quadratic). The weights measure label *values* by default (the
  dashboard's; statsmodels' with the values as weights), or with ``scale="positions"`` the
  labels' positions among those a pair used (scikit-learn's default).
- Per annotator: ``annotator_quality`` (accuracy and MAE on gold items,
  agreement with the median of the other annotators).
- Uncertainty: ``bootstrap_agreement`` (percentile intervals, resampling items).
- Everything for a report: ``agreement_report``.

Undefined values are ``NaN``, never an exception: alpha and kappa when all
labels are equal or nothing is pairable, agreement rates without an item of
two labels, kappa of annotators who share no item.

``MEASURES`` maps each all-annotator measure to its kernel on the sums; the
report and the bootstrap read it. ``METRIC_SPECS`` declares the named metrics
(``krippendorff_alpha_ordinal``, ...) in the platform-wide registry
(``evalcore.metrics``). Every measure is higher-better,
1 for perfect agreement; the kappas and alpha are 0 at chance level.
"""

from evalcore.agreement._annotators import AnnotatorQuality, annotator_quality, gold_per_item
from evalcore.agreement._bootstrap import bootstrap_agreement
from evalcore.agreement._cohen import (
    KAPPA_SCALES,
    KAPPA_WEIGHTS,
    KappaScale,
    KappaWeights,
    PairConfusion,
    cohen_kappa_from_confusion,
    cohen_kappa_matrix,
    pair_confusion,
)
from evalcore.agreement._files import read_annotations_csv
from evalcore.agreement._labels import LongLabels
from evalcore.agreement._median import ROUNDINGS, Rounding, group_medians, item_medians, leave_one_out_medians
from evalcore.agreement._report import AgreementReport, agreement_report
from evalcore.agreement._stats import (
    LEVELS,
    MEASURES,
    METRIC_SPECS,
    AgreementMetric,
    AgreementStats,
    Level,
    agreement_stats,
    exact_agreement,
    fleiss_kappa,
    krippendorff_alpha,
    krippendorff_alpha_from_coincidence,
    pairwise_agreement,
)
from evalcore.stats._validation import StatsInputError

__all__ = [
    "KAPPA_SCALES",
    "KAPPA_WEIGHTS",
    "LEVELS",
    "MEASURES",
    "METRIC_SPECS",
    "ROUNDINGS",
    "AgreementMetric",
    "AgreementReport",
    "AgreementStats",
    "AnnotatorQuality",
    "KappaScale",
    "KappaWeights",
    "Level",
    "LongLabels",
    "PairConfusion",
    "Rounding",
    "StatsInputError",
    "agreement_report",
    "agreement_stats",
    "annotator_quality",
    "bootstrap_agreement",
    "cohen_kappa_from_confusion",
    "cohen_kappa_matrix",
    "exact_agreement",
    "fleiss_kappa",
    "gold_per_item",
    "group_medians",
    "item_medians",
    "krippendorff_alpha",
    "krippendorff_alpha_from_coincidence",
    "leave_one_out_medians",
    "pair_confusion",
    "pairwise_agreement",
    "read_annotations_csv",
]
