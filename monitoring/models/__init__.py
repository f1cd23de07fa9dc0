"""Models of the monitoring app: what teams upload (`runs`), and the evaluation and comparison jobs with
their results (`evaluations`); recommendation sets and fraud score sets with their evaluations and results
(`recsys_fraud`). Monitors and alerts come next."""

from monitoring.models.alerts import AlertEvent, AlertRule, Notification, NotificationChannel
from monitoring.models.evaluations import (
    PARAMS,
    Comparison,
    ComparisonPair,
    Evaluation,
    options_key,
)
from monitoring.models.monitors import EmbeddingSnapshot, EmbeddingStream, MonitorRun
from monitoring.models.recsys_fraud import (
    RECSYS_FILE_ROLES,
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
    options_key_of,
)
from monitoring.models.runs import QrelsSource, Run

__all__ = [
    "PARAMS",
    "AlertEvent",
    "AlertRule",
    "EmbeddingSnapshot",
    "EmbeddingStream",
    "MonitorRun",
    "Notification",
    "NotificationChannel",
    "RECSYS_FILE_ROLES",
    "Comparison",
    "ComparisonPair",
    "Evaluation",
    "FraudScoreEvaluation",
    "FraudScoreSet",
    "QrelsSource",
    "RecommendationEvaluation",
    "RecommendationSet",
    "Run",
    "options_key",
    "options_key_of",
]
