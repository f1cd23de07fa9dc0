"""Models of the monitoring app: what teams upload (`runs`), and the evaluation and comparison jobs with
their results (`evaluations`). Monitors and alerts come next."""

from monitoring.models.evaluations import (
    DEFAULT_MEASURES,
    Comparison,
    ComparisonPair,
    ComparisonSummary,
    Evaluation,
    EvaluationResult,
    options_key,
)
from monitoring.models.runs import QrelsSource, Run

__all__ = [
    "DEFAULT_MEASURES",
    "Comparison",
    "ComparisonPair",
    "ComparisonSummary",
    "Evaluation",
    "EvaluationResult",
    "QrelsSource",
    "Run",
    "options_key",
]
