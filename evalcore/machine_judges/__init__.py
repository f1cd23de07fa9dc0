"""Machine judges (LLM graders, click models) under human control: calibration and corrected metrics.

Framework-free, like the rest of ``evalcore``: the Django side stores machine judges and their labels
and calls these functions on arrays it reads from the database; the file commands ``calibrate_judge``
and ``ppi_evaluate`` call them on files.

- Labels: ``read_machine_labels`` (TREC qrels or JSON Lines ``{qid, doc_id, label, confidence?,
  rationale?}``, told apart by content; all or nothing, a bad line is a ``FormatError`` naming the file,
  the line and the reason) and ``pair_labels`` (the pairs a human qrels and a machine judge both graded).
- Calibration: ``calibrate_judge`` on aligned human and machine grades: Cohen's kappa (unweighted,
  linear, quadratic), Krippendorff's alpha (ordinal), the human x machine confusion matrix, the bias
  overall and per human grade (``GradeBias``), agreement per topic (``TopicAgreement``) and per band of
  the machine's confidence (``ConfidenceBands``);
  ``krippendorff_alpha_with_humans`` when each pair has several human labels; ``ranking_agreement``:
  Kendall's tau and tau_AP between the leaderboards of runs on the machine's and the humans' labels.
- Corrected metrics: ``ppi_compare`` (prediction-powered inference, PPI++, human-only and
  machine-only estimates of a mean metric with normal intervals), its parts ``ppi_mean``,
  ``ppi_tuning`` and ``sample_mean``, and ``ppi_evaluate`` for a run and two qrels (``ppi_evaluate_measures``: several measures
  with one evaluation; ``queries_restricted``: a qrels cut to the human sample's queries).
"""

from evalcore.machine_judges._calibration import (
    ConfidenceBands,
    GradeBias,
    JudgeCalibration,
    TopicAgreement,
    calibrate_judge,
    calibration_json,
    confidence_bands,
    krippendorff_alpha_with_humans,
    leaning,
)
from evalcore.machine_judges._labels import (
    JSONL_FIELDS,
    JudgedPairs,
    MachineLabels,
    pair_labels,
    read_machine_labels,
)
from evalcore.machine_judges._ppi import (
    ESTIMANDS,
    Estimand,
    MeanEstimate,
    NoHumanQueriesError,
    PPIComparison,
    ppi_compare,
    ppi_mean,
    ppi_tuning,
    sample_mean,
)
from evalcore.machine_judges._runs import (
    QueriesNotJudgedError,
    RankingAgreement,
    is_query_mean,
    per_query_scores,
    ppi_evaluate,
    ppi_evaluate_measures,
    queries_restricted,
    ranking_agreement,
)

__all__ = [
    "ESTIMANDS",
    "JSONL_FIELDS",
    "ConfidenceBands",
    "Estimand",
    "GradeBias",
    "JudgeCalibration",
    "JudgedPairs",
    "MachineLabels",
    "MeanEstimate",
    "NoHumanQueriesError",
    "PPIComparison",
    "QueriesNotJudgedError",
    "RankingAgreement",
    "TopicAgreement",
    "calibrate_judge",
    "calibration_json",
    "confidence_bands",
    "is_query_mean",
    "krippendorff_alpha_with_humans",
    "leaning",
    "pair_labels",
    "per_query_scores",
    "ppi_compare",
    "ppi_evaluate",
    "ppi_evaluate_measures",
    "ppi_mean",
    "ppi_tuning",
    "queries_restricted",
    "ranking_agreement",
    "read_machine_labels",
    "sample_mean",
]
