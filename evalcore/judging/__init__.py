"""Judging: annotator reliability, quality figures and qrels from the answers of a judging project.

The Django app reads a project's answers into `Answers` (aligned arrays, one entry per answer) and its
pairs into `Pairs`, then:

- `quality_figures(answers, overrides=..., min_accuracy=..., min_gold=...)`: per annotator, accuracy on
  gold, speed, too-fast share and agreement with the others' consensus; per project, agreement metrics
  with bootstrap intervals, Cohen's kappa matrices and the label distribution.
- `pair_disagreements` / `annotator_disagreements`: the items behind a kappa cell or an annotator's
  accuracy and consensus, largest disagreement first (the quality page's drill-down).
- `annotator_reliability`: seed 004's rule (accuracy on gold >= 0.7 on >= 10 gold items), then the leads'
  overrides (`Override`: auto, include, exclude).
- `qrels_compute(answers, pairs=..., overrides=..., params=QrelsParams(...), adjudications=...)`: the
  judgments of a qrels build with its counts and agreement figures, adjudicated grades (`Adjudicated`)
  as their own source; `qrels_text` writes them as TREC qrels or JSONL.
- `qrels_disagreements`: the pairs the same computation drops for disagreement (the adjudication queue).
"""

from evalcore.judging._answers import Answers, Pairs
from evalcore.judging._disagreements import LabelDisagreements, annotator_disagreements, pair_disagreements
from evalcore.judging._qrels import (
    AGGREGATIONS,
    DEFAULT_QRELS_PARAMS,
    EXPORT_FORMATS,
    Adjudicated,
    Aggregation,
    DroppedPairs,
    ExportFormat,
    GoldMismatch,
    Judgment,
    QrelsCounts,
    QrelsError,
    QrelsParams,
    QrelsResult,
    gold_mismatches,
    qrels_compute,
    qrels_disagreements,
    qrels_jsonl,
    qrels_text,
    qrels_trec,
)
from evalcore.judging._quality import (
    BOOTSTRAP_RESAMPLES,
    CONFIDENCE,
    QUALITY_AGREEMENT,
    agreement_figures,
    agreement_values,
    quality_figures,
)
from evalcore.judging._reliability import (
    OVERRIDES,
    REASONS,
    TOLERANCE,
    Override,
    Reason,
    Reliability,
    annotator_reliability,
    answers_quality,
)

__all__ = [
    "AGGREGATIONS",
    "BOOTSTRAP_RESAMPLES",
    "CONFIDENCE",
    "DEFAULT_QRELS_PARAMS",
    "EXPORT_FORMATS",
    "OVERRIDES",
    "QUALITY_AGREEMENT",
    "REASONS",
    "TOLERANCE",
    "Adjudicated",
    "Aggregation",
    "Answers",
    "DroppedPairs",
    "ExportFormat",
    "GoldMismatch",
    "Judgment",
    "LabelDisagreements",
    "Override",
    "Pairs",
    "QrelsCounts",
    "QrelsError",
    "QrelsParams",
    "QrelsResult",
    "Reason",
    "Reliability",
    "agreement_figures",
    "agreement_values",
    "annotator_disagreements",
    "annotator_reliability",
    "answers_quality",
    "pair_disagreements",
    "gold_mismatches",
    "qrels_compute",
    "qrels_disagreements",
    "qrels_jsonl",
    "qrels_text",
    "qrels_trec",
    "quality_figures",
]
