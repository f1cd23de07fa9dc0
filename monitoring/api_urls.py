"""REST URLs of the evaluation service, included under /api/. Each slice's `api` module serves its
part: `teams` (my teams), `files` (runs and qrels sources), `evaluations` (evaluations, per-query values,
the leaderboard, comparisons), `recsys_fraud`, `embeddings`, `alerts`, `pooling` (pools built from runs, under a judging project), `fusion` (fusions of runs into a new run); `common` the metric registry
(`/api/metrics/`), the input and output shapes (`serializers`), the page envelope (`pagination`) and the
API's own read queries (`queries`).

Every view looks its team up through `evalplatform.teams.get_team_for_member`: non-members get a 404
for everything of the team, a viewer asking to write a 403. Bad input is a 400 whose body names the
field, `{"file": ["bm25.run:2: score is not a number"]}`; other errors are `{"detail": ...}`.
"""

from django.urls import path

from monitoring.alerts import api as alerts
from monitoring.common import api as metrics
from monitoring.embeddings import api as streams
from monitoring.evaluations.api import comparisons, evaluations, loop
from monitoring.files import api as files
from monitoring.fusion import api as fusion_api
from monitoring.machine_judges import api as machine_judges
from monitoring.pooling import api as pools
from monitoring.recsys_fraud import api as recsys_fraud
from monitoring.recsys_fraud import comparison_api as recsys_fraud_compare
from monitoring.reports import api as reports
from monitoring.reuse import api as reuse
from monitoring.teams import api as teams

app_name = "monitoring-api"

urlpatterns = [
    path("teams/", teams.team_list, name="teams"),
    path("teams/<slug:team>/", teams.team_detail, name="team"),
    path("teams/<slug:team>/members/", teams.member_list, name="team-members"),
    path("teams/<slug:team>/members/<int:pk>/", teams.member_detail, name="team-member"),
    path("teams/<slug:team>/runs/", files.run_list, name="runs"),
    # Pools built from runs, under the judging project they feed (its leads).
    path("projects/<slug:slug>/pools/", pools.pool_list, name="pools"),
    path("projects/<slug:slug>/pools/<int:pk>/", pools.pool_detail, name="pool"),
    path("projects/<slug:slug>/pools/<int:pk>/progress/", pools.pool_progress, name="pool-progress"),
    path("projects/<slug:slug>/pools/<int:pk>/simulation/", pools.pool_simulation, name="pool-simulation"),
    path("teams/<slug:team>/runs/<int:pk>/", files.run_detail, name="run"),
    path("teams/<slug:team>/runs/<int:pk>/download/", files.run_download, name="run-download"),
    path("teams/<slug:team>/qrels/", files.qrels_list, name="qrels"),
    path("teams/<slug:team>/qrels/<int:pk>/", files.qrels_detail, name="qrels-detail"),
    path("teams/<slug:team>/qrels/<int:pk>/download/", files.qrels_download, name="qrels-download"),
    path("teams/<slug:team>/leaderboard/<int:pk>/", evaluations.leaderboard, name="leaderboard"),
    path("teams/<slug:team>/qrels/<int:pk>/reuse/", reuse.qrels_reuse, name="qrels-reuse"),
    path("teams/<slug:team>/reuse-analyses/<int:pk>/", reuse.reuse_analysis, name="reuse-analysis"),
    path(
        "teams/<slug:team>/leaderboard/<int:pk>/diff/", loop.leaderboard_diff_detail, name="leaderboard-diff"
    ),
    path(
        "teams/<slug:team>/leaderboard/<int:pk>/runs/<int:run>/gaps/",
        loop.judge_gaps,
        name="leaderboard-gaps",
    ),
    path("teams/<slug:team>/gaps-requests/<int:pk>/", loop.gaps_request, name="gaps-request"),
    path(
        "teams/<slug:team>/leaderboard/<int:pk>/coverage/", loop.compute_coverage, name="leaderboard-coverage"
    ),
    path(
        "teams/<slug:team>/leaderboard/<int:pk>/ppi/", machine_judges.leaderboard_ppi, name="leaderboard-ppi"
    ),
    path("teams/<slug:team>/evaluations/", evaluations.evaluation_list, name="evaluations"),
    path("teams/<slug:team>/evaluations/<int:pk>/", evaluations.evaluation_detail, name="evaluation"),
    path(
        "teams/<slug:team>/evaluations/<int:pk>/per-query/",
        evaluations.evaluation_per_query,
        name="evaluation-per-query",
    ),
    path("teams/<slug:team>/comparisons/", comparisons.comparison_list, name="comparisons"),
    path("teams/<slug:team>/comparisons/<int:pk>/", comparisons.comparison_detail, name="comparison"),
    path("teams/<slug:team>/fusions/", fusion_api.fusion_list, name="fusions"),
    path("teams/<slug:team>/fusions/<int:pk>/", fusion_api.fusion_detail, name="fusion"),
    # Reports to share and cite (`monitoring.reports.api`).
    path(
        "teams/<slug:team>/evaluations/<int:pk>/report/", reports.evaluation_report, name="evaluation-report"
    ),
    path(
        "teams/<slug:team>/comparisons/<int:pk>/report/", reports.comparison_report, name="comparison-report"
    ),
    path(
        "teams/<slug:team>/streams/<slug:stream>/runs/<int:pk>/report/",
        reports.monitor_run_report,
        name="stream-run-report",
    ),
    path("teams/<slug:team>/alert-rules/", alerts.rule_list, name="alert-rules"),
    path("teams/<slug:team>/alert-rules/<int:pk>/", alerts.rule_detail, name="alert-rule"),
    path("teams/<slug:team>/channels/", alerts.channel_list, name="channels"),
    path("teams/<slug:team>/channels/<int:pk>/", alerts.channel_detail, name="channel"),
    path("teams/<slug:team>/channels/<int:pk>/test/", alerts.channel_test, name="channel-test"),
    path("teams/<slug:team>/alerts/", alerts.event_list, name="alerts"),
    path(
        "teams/<slug:team>/alerts/<int:pk>/acknowledge/", alerts.event_acknowledge, name="alert-acknowledge"
    ),
    # Recommendation sets and fraud score sets (`monitoring.recsys_fraud.api`).
    path(
        "teams/<slug:team>/recommendation-sets/",
        recsys_fraud.recommendation_set_list,
        name="recommendation-sets",
    ),
    path(
        "teams/<slug:team>/recommendation-sets/<int:pk>/",
        recsys_fraud.recommendation_set_detail,
        name="recommendation-set",
    ),
    path(
        "teams/<slug:team>/recommendation-sets/<int:pk>/files/<str:role>/",
        recsys_fraud.recommendation_set_file,
        name="recommendation-set-file",
    ),
    path(
        "teams/<slug:team>/recommendation-evaluations/",
        recsys_fraud.recommendation_evaluation_list,
        name="recommendation-evaluations",
    ),
    path(
        "teams/<slug:team>/recommendation-evaluations/<int:pk>/",
        recsys_fraud.recommendation_evaluation_detail,
        name="recommendation-evaluation",
    ),
    path(
        "teams/<slug:team>/recommendation-evaluations/<int:pk>/curves/",
        recsys_fraud.recommendation_evaluation_curves,
        name="recommendation-evaluation-curves",
    ),
    path("teams/<slug:team>/fraud-score-sets/", recsys_fraud.fraud_score_set_list, name="fraud-score-sets"),
    path(
        "teams/<slug:team>/fraud-score-sets/<int:pk>/",
        recsys_fraud.fraud_score_set_detail,
        name="fraud-score-set",
    ),
    path(
        "teams/<slug:team>/fraud-score-sets/<int:pk>/download/",
        recsys_fraud.fraud_score_set_download,
        name="fraud-score-set-download",
    ),
    path(
        "teams/<slug:team>/fraud-evaluations/", recsys_fraud.fraud_evaluation_list, name="fraud-evaluations"
    ),
    path(
        "teams/<slug:team>/fraud-evaluations/<int:pk>/",
        recsys_fraud.fraud_evaluation_detail,
        name="fraud-evaluation",
    ),
    path(
        "teams/<slug:team>/fraud-evaluations/<int:pk>/curves/",
        recsys_fraud.fraud_evaluation_curves,
        name="fraud-evaluation-curves",
    ),
    path(
        "teams/<slug:team>/fraud-comparisons/",
        recsys_fraud_compare.fraud_comparison_list,
        name="fraud-comparisons",
    ),
    path(
        "teams/<slug:team>/fraud-comparisons/<int:pk>/",
        recsys_fraud_compare.fraud_comparison_detail,
        name="fraud-comparison",
    ),
    path(
        "teams/<slug:team>/recommendation-comparisons/",
        recsys_fraud_compare.recommendation_comparison_list,
        name="recommendation-comparisons",
    ),
    path(
        "teams/<slug:team>/recommendation-comparisons/<int:pk>/",
        recsys_fraud_compare.recommendation_comparison_detail,
        name="recommendation-comparison",
    ),
    path("teams/<slug:team>/streams/", streams.stream_list, name="streams"),
    path("teams/<slug:team>/streams/<slug:stream>/", streams.stream_detail, name="stream"),
    path(
        "teams/<slug:team>/streams/<slug:stream>/schedule/", streams.stream_schedule, name="stream-schedule"
    ),
    path("teams/<slug:team>/streams/<slug:stream>/monitor/", streams.stream_monitor, name="stream-monitor"),
    path(
        "teams/<slug:team>/streams/<slug:stream>/recompute/",
        streams.stream_recompute,
        name="stream-recompute",
    ),
    path(
        "teams/<slug:team>/streams/<slug:stream>/snapshots/", streams.snapshot_list, name="stream-snapshots"
    ),
    path(
        "teams/<slug:team>/streams/<slug:stream>/snapshots/<int:pk>/",
        streams.snapshot_detail,
        name="stream-snapshot",
    ),
    path("teams/<slug:team>/streams/<slug:stream>/runs/", streams.run_list, name="stream-runs"),
    path("teams/<slug:team>/streams/<slug:stream>/runs/<int:pk>/", streams.run_detail, name="stream-run"),
    path("teams/<slug:team>/streams/<slug:stream>/series/", streams.stream_series, name="stream-series"),
    path("teams/<slug:team>/streams/<slug:stream>/alerts/", streams.event_list, name="stream-alerts"),
    path("metrics/", metrics.metric_list, name="metrics"),
    path("metrics/<str:name>/", metrics.metric_detail, name="metric"),
]
