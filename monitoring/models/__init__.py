"""Models of the monitoring app. Each is defined in its slice and imported here, so that Django finds
every one under the app label `monitoring`: runs and qrels sources (`files`), evaluations and
comparisons (`evaluations`), fusions of runs (`fusion`), pools built from runs (`pooling`), recommendation
and fraud sets (`recsys_fraud`), embedding streams and monitor runs (`embeddings`), leaderboards scored on a
machine judge's labels (`machine_judges`), alert rules, events and notifications (`alerts`).
"""

from monitoring.alerts.models import AlertEvent, AlertRule, Notification, NotificationChannel
from monitoring.embeddings.models import EmbeddingSnapshot, EmbeddingStream, MonitorRun
from monitoring.evaluations.models import (
    PARAMS,
    Comparison,
    ComparisonPair,
    Evaluation,
    GapsRequest,
    options_key,
)
from monitoring.files.models import QrelsSource, Run
from monitoring.fusion.models import Fusion
from monitoring.machine_judges.models import MachineJudgeEvaluation
from monitoring.pooling.models import JudgingPool, PoolReprioritise, PoolTask
from monitoring.recsys_fraud.comparison_models import FraudComparison, RecommendationComparison
from monitoring.recsys_fraud.models import (
    RECSYS_FILE_ROLES,
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
    options_key_of,
)
from monitoring.reuse.models import ReuseAnalysis

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
    "FraudComparison",
    "FraudScoreEvaluation",
    "FraudScoreSet",
    "Fusion",
    "GapsRequest",
    "JudgingPool",
    "MachineJudgeEvaluation",
    "PoolReprioritise",
    "PoolTask",
    "QrelsSource",
    "RecommendationComparison",
    "RecommendationEvaluation",
    "RecommendationSet",
    "ReuseAnalysis",
    "Run",
    "options_key",
    "options_key_of",
]
