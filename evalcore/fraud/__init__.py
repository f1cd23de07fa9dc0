"""Fraud and anomaly detection metrics: operating points, curves, costs and time to detection.

Every threshold metric reads one `ScoreCurve` (`score_curve`): the distinct scores in decreasing
order and how many frauds (positives) and legitimate examples (negatives) score at least each, built
with one sort of the scores. An example is flagged when its score is >= the threshold; tied scores
are flagged together. `read_scores` reads a CSV `id,score,label[,amount][,entity,timestamp]`;
`evaluate_scores(examples, FraudOptions(...))` computes every metric from shared statistics. The
costs and detection times are taken at the operating point (`OperatingPoint`): the threshold given,
else the detection point, unless flagging nothing is at least as cheap; the report says so.

| name | formula | notes |
|---|---|---|
| `detection_rate` | max TPR(t) over thresholds t with FPR(t) <= target | `conservative`, the default: a deployable threshold, reported with its realised FPR |
| `detection_rate_interpolated` | TPR on the ROC curve at FPR = target, linear between points | as public benchmarks report "TPR at 1% FPR"; never below the conservative rate |
| `threshold`, `realised_fpr` | the conservative point's t and FPR(t) | of the thresholds with the best TPR, the highest; +inf (JSON null): none catches a fraud, flag nothing |
| `roc_auc` | P(score fraud > score legit) + P(tie) / 2 | the trapezoidal area, summed exactly in integers; equals scikit-learn |
| `pr_auc` | sum_j (R_j - R_{j-1}) P_j over distinct scores | step-wise average precision, equals scikit-learn's `average_precision_score` |
| `precision_at_budget`, `recall_at_budget` | TP among the top K / min(K, n), TP / frauds | a tie cut by the budget counts its expected share of frauds |
| `total_cost` | c_FP * FP + sum of c_FN over missed frauds | c_FN per example: `fn_cost` x amount when amounts are given |
| `cost_per_prediction` | total_cost / n | |
| `savings` | 1 - total_cost / cost(flag nothing) | seed 004's "cost reduction vs baseline" |
| `savings_vs_best_trivial` | 1 - total_cost / min(cost(flag nothing), cost(flag everything)) | negative when a trivial policy is cheaper |
| `mean_ttd`, `median_ttd`, `p95_ttd` | over anomalous entities detected: first flag at/after first fraud - first fraud | p95 by linear interpolation, as seed 004 |
| `entity_detection_rate` | detected / anomalous entities | undetected entities are listed, not dropped |

Comparing two models: `read_ids` and `pair_by_id` match two files' examples by id (refusing a
repeated id, an id one file lacks, or a label that differs); `evalcore.stats.delong_test` and
`auc_difference_ci` then compare their ROC areas on the paired examples.

How seed 004 differs. Its detection rate walks the examples in score order and stops at the
int(target x negatives)-th negative: it misses the frauds ranked between that negative and the next
one (the conservative threshold still flags them within the target), and it splits tied scores by
sort position. On its own generated data (numpy seed 42, 10,000 examples) both give 24.2% at 1% FPR;
its cost reduction at score > 0.5 with costs 100 and 10,000 is 23.0% here too. It returns 0 for
undefined rates where we return NaN (ROC-AUC and PR-AUC with one class, savings with a free baseline).
"""

from evalcore.fraud._cost import CostReport, cost_at_threshold, cost_evaluation
from evalcore.fraud._curve import (
    FraudInputError,
    ScoreCurve,
    pr_auc_score,
    precision_recall_curve,
    precision_recall_curve_from,
    roc_auc_score,
    roc_curve,
    roc_curve_from,
    score_curve,
)
from evalcore.fraud._files import read_scores
from evalcore.fraud._operating import (
    DEFAULT_TARGET_FPR,
    DETECTION_METHODS,
    BudgetResult,
    DetectionMethod,
    DetectionRate,
    detection_rate_at_fpr,
    precision_recall_at_budget,
)
from evalcore.fraud._pairing import PairedRows, pair_by_id, read_ids
from evalcore.fraud._registry import (
    METRIC_SPECS,
    METRICS,
    FraudEvaluation,
    FraudMetric,
    FraudOptions,
    OperatingPoint,
    ScoredExamples,
    evaluate_scores,
)
from evalcore.fraud._ttd import DetectionTimes, time_to_detection

__all__ = [
    "DEFAULT_TARGET_FPR",
    "DETECTION_METHODS",
    "METRICS",
    "METRIC_SPECS",
    "BudgetResult",
    "CostReport",
    "DetectionMethod",
    "DetectionRate",
    "DetectionTimes",
    "FraudEvaluation",
    "FraudInputError",
    "FraudMetric",
    "FraudOptions",
    "OperatingPoint",
    "PairedRows",
    "ScoreCurve",
    "ScoredExamples",
    "cost_at_threshold",
    "cost_evaluation",
    "detection_rate_at_fpr",
    "evaluate_scores",
    "pair_by_id",
    "pr_auc_score",
    "precision_recall_at_budget",
    "precision_recall_curve",
    "precision_recall_curve_from",
    "read_ids",
    "read_scores",
    "roc_auc_score",
    "roc_curve",
    "roc_curve_from",
    "score_curve",
    "time_to_detection",
]
