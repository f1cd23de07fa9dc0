"""HTML URLs of the evaluation service, included at the site root: everything lives under a team.
Each slice's `views` serves its pages.

Pools built from runs live under the judging project they feed (`projects/<slug>/pools/`), for its leads.

Views are thin: each looks its team up through `evalplatform.teams.get_team_for_member` (404 to non-members,
403 to a viewer asking to write), reads through its slice's selectors and renders. No measure is computed
in a request: the pages lay out the rows the jobs stored.
"""

from django.urls import path

from monitoring.alerts import views as alerts
from monitoring.editing import views as editing
from monitoring.editing.services import KINDS
from monitoring.embeddings import views as streams
from monitoring.evaluations.views import comparisons, diffs, jobs, leaderboard, runs
from monitoring.files import views as uploads
from monitoring.fusion import views as fusions
from monitoring.machine_judges import views as machine_judges
from monitoring.pooling import views as pools
from monitoring.recsys_fraud import comparison_views as recsys_fraud_compare
from monitoring.recsys_fraud import views as recsys_fraud
from monitoring.reports import views as reports
from monitoring.reuse import views as reuse
from monitoring.teams import members
from monitoring.teams import views as teams

app_name = "monitoring"

TEAM = "teams/<slug:team>/"
STREAM = TEAM + "streams/<slug:stream>/"
POOLS = "projects/<slug:slug>/pools/"
RECSYS_EVALUATION = "recommendations/evaluations/<int:pk>/"
FRAUD_EVALUATION = "fraud-scores/evaluations/<int:pk>/"

urlpatterns = [
    path("teams/", teams.team_list, name="team-list"),
    path("teams/new/", members.team_create_view, name="team-create"),
    path(TEAM, teams.team_home, name="team"),
    path(TEAM + "edit/", members.team_edit, name="team-edit"),
    path(TEAM + "members/", members.team_members, name="team-members"),
    path(TEAM + "members/<int:pk>/role/", members.team_member_role, name="team-member-role"),
    path(TEAM + "members/<int:pk>/remove/", members.team_member_remove, name="team-member-remove"),
    *[
        path(
            TEAM + f"{kind.slug}/<int:pk>/{action}/",
            view,
            {"kind": kind.slug},
            name=f"{kind.prefix}-{action}",
        )
        for kind in KINDS.values()
        for action, view in (
            ("edit", editing.item_edit),
            ("archive", editing.item_archive),
            ("delete", editing.item_delete),
        )
        if action in kind.actions
    ],
    path(TEAM + "runs/new/", uploads.run_upload, name="run-upload"),
    path(TEAM + "runs/<int:pk>/", runs.run_detail, name="run-detail"),
    path(TEAM + "qrels/new/", uploads.qrels_add, name="qrels-add"),
    path(TEAM + "qrels/from-build/", uploads.qrels_from_build, name="qrels-from-build"),
    path(TEAM + "evaluations/new/", jobs.evaluation_create, name="evaluation-create"),
    path(TEAM + "evaluations/<int:pk>/per-query.csv", runs.evaluation_csv, name="evaluation-csv"),
    path(TEAM + "comparisons/new/", jobs.comparison_create, name="comparison-create"),
    path(TEAM + "comparisons/<int:pk>/", comparisons.comparison_detail, name="comparison-detail"),
    path(TEAM + "comparisons/<int:pk>/significance.csv", comparisons.comparison_csv, name="comparison-csv"),
    path(TEAM + "comparisons/<int:pk>/overlap.csv", comparisons.overlap_csv, name="comparison-overlap-csv"),
    path(TEAM + "comparisons/<int:pk>/tukey.csv", comparisons.tukey_csv, name="comparison-tukey-csv"),
    path(TEAM + "comparisons/<int:pk>/anova.csv", comparisons.anova_csv, name="comparison-anova-csv"),
    path(TEAM + "fusions/new/", fusions.fusion_create, name="fusion-create"),
    path(TEAM + "fusions/<int:pk>/", fusions.fusion_detail, name="fusion-detail"),
    path(
        TEAM + "comparisons/<int:pk>/pairs/<int:pair>.csv", comparisons.pair_csv, name="comparison-pair-csv"
    ),
    # Reports to share and cite (`monitoring.reports.views`).
    path(TEAM + "evaluations/<int:pk>/report.html", reports.evaluation_report, name="evaluation-report"),
    path(
        TEAM + "comparisons/<int:pk>/report.html",
        reports.comparison_report,
        {"fmt": "html"},
        name="comparison-report",
    ),
    path(
        TEAM + "comparisons/<int:pk>/table.tex",
        reports.comparison_report,
        {"fmt": "latex"},
        name="comparison-latex",
    ),
    path(
        TEAM + "comparisons/<int:pk>/table.md",
        reports.comparison_report,
        {"fmt": "markdown"},
        name="comparison-markdown",
    ),
    path(STREAM + "report.html", reports.monitor_run_report, name="stream-run-report"),
    path(TEAM + "leaderboard/<int:pk>/", leaderboard.leaderboard, name="leaderboard"),
    path(TEAM + "leaderboard/<int:pk>/leaderboard.csv", leaderboard.leaderboard_csv, name="leaderboard-csv"),
    # Reusability, annotator sensitivity and the planner of a qrels source (`monitoring.reuse.views`).
    path(TEAM + "qrels/<int:pk>/reuse/", reuse.qrels_reuse, name="qrels-reuse"),
    path(TEAM + "qrels/<int:pk>/reuse/run/", reuse.qrels_reuse_run, name="qrels-reuse-run"),
    path(TEAM + "qrels/<int:pk>/reuse/<str:analysis>.csv", reuse.qrels_reuse_csv, name="qrels-reuse-csv"),
    path(TEAM + "leaderboard/<int:pk>/runs/<int:run>/gaps/", leaderboard.judge_gaps, name="leaderboard-gaps"),
    path(TEAM + "leaderboard/<int:pk>/coverage/", leaderboard.compute_coverage, name="leaderboard-coverage"),
    path(TEAM + "leaderboard/<int:pk>/ppi/", machine_judges.leaderboard_ppi_compute, name="leaderboard-ppi"),
    path(TEAM + "leaderboard/<int:pk>/diff/", diffs.leaderboard_diff_page, name="leaderboard-diff"),
    path(TEAM + "leaderboard/<int:pk>/diff.csv", diffs.leaderboard_diff_csv, name="leaderboard-diff-csv"),
    path(TEAM + "jobs/<str:kind>/<int:pk>.json", jobs.job_state, name="job-state"),
    # Pools built from runs, under the judging project they feed (`monitoring.pooling.views`; its leads).
    path(POOLS, pools.pool_list, name="pool-list"),
    path(POOLS + "<int:pk>/", pools.pool_detail, name="pool-detail"),
    path(POOLS + "<int:pk>/yield.csv", pools.pool_yield_csv, name="pool-yield-csv"),
    path(POOLS + "<int:pk>/simulation.csv", pools.pool_simulation_csv, name="pool-simulation-csv"),
    path(POOLS + "<int:pk>/simulation/", pools.pool_simulate, name="pool-simulate"),
    path(POOLS + "<int:pk>/state.json", pools.pool_state, name="pool-state"),
    path(POOLS + "<int:pk>/refresh/", pools.pool_refresh, name="pool-refresh"),
    path(POOLS + "<int:pk>/delete/", pools.pool_delete, name="pool-delete"),
    # Alerts (`monitoring.alerts.views`).
    path(TEAM + "alerts/", alerts.alerts_page, name="alerts"),
    path(TEAM + "alerts/rules/", alerts.rule_create, name="alert-rule-create"),
    path(TEAM + "alerts/rules/<int:pk>/", alerts.rule_toggle, name="alert-rule-change"),
    path(TEAM + "alerts/rules/<int:pk>/settings/", alerts.rule_detail, name="alert-rule-detail"),
    path(TEAM + "alerts/rules/<int:pk>/delete/", alerts.rule_delete, name="alert-rule-delete"),
    path(TEAM + "alerts/channels/", alerts.channel_create, name="channel-create"),
    path(TEAM + "alerts/channels/<int:pk>/delete/", alerts.channel_delete, name="channel-delete"),
    path(TEAM + "alerts/channels/<int:pk>/", alerts.channel_detail, name="channel-detail"),
    path(TEAM + "alerts/channels/<int:pk>/test/", alerts.channel_test, name="channel-test"),
    path(TEAM + "alerts/<int:pk>/acknowledge/", alerts.event_acknowledge, name="alert-acknowledge"),
    # Embedding streams (`monitoring.embeddings.views`).
    path(TEAM + "streams/new/", streams.stream_create, name="stream-create"),
    path(STREAM, streams.stream_detail, name="stream-detail"),
    path(STREAM + "edit/", streams.stream_edit, name="stream-edit"),
    path(STREAM + "delete/", streams.stream_delete, name="stream-delete"),
    path(STREAM + "upload/", streams.snapshot_upload, name="stream-upload"),
    path(STREAM + "monitor/", streams.stream_monitor, name="stream-monitor"),
    path(STREAM + "recompute/", streams.stream_recompute, name="stream-recompute"),
    path(STREAM + "series.csv", streams.series_csv, name="stream-series-csv"),
    path(STREAM + "spectrum.csv", streams.spectrum_csv, name="stream-spectrum-csv"),
    path(STREAM + "alerts.csv", streams.alerts_csv, name="stream-alerts-csv"),
    path(STREAM + "runs/<int:pk>.json", streams.run_state, name="stream-run-state"),
    # Recommendation sets and fraud score sets (`monitoring.recsys_fraud.views`).
    path(TEAM + "recommendations/new/", recsys_fraud.recsys_upload, name="recsys-upload"),
    path(TEAM + "recommendations/<int:pk>/", recsys_fraud.recsys_set, name="recsys-set"),
    path(TEAM + "recommendations/<int:pk>/evaluate/", recsys_fraud.recsys_evaluate, name="recsys-evaluate"),
    path(
        TEAM + "recommendations/<int:pk>/history.csv",
        recsys_fraud.history_csv,
        {"kind": "recommendation"},
        name="recsys-history-csv",
    ),
    path(TEAM + RECSYS_EVALUATION, recsys_fraud.recsys_evaluation, name="recsys-evaluation"),
    path(
        TEAM + RECSYS_EVALUATION + "<str:table>.csv",
        recsys_fraud.dashboard_csv,
        {"kind": "recommendation"},
        name="recsys-csv",
    ),
    path(TEAM + RECSYS_EVALUATION + "compare/", recsys_fraud_compare.recsys_compare, name="recsys-compare"),
    path(
        TEAM + "recommendations/comparisons/<int:pk>/",
        recsys_fraud_compare.recsys_comparison,
        name="recsys-comparison",
    ),
    path(
        TEAM + "recommendations/comparisons/<int:pk>/<str:table>.csv",
        recsys_fraud_compare.comparison_csv,
        {"kind": "recommendation"},
        name="recsys-comparison-csv",
    ),
    path(TEAM + "fraud-scores/new/", recsys_fraud.fraud_upload, name="fraud-upload"),
    path(TEAM + "fraud-scores/<int:pk>/", recsys_fraud.fraud_set, name="fraud-set"),
    path(TEAM + "fraud-scores/<int:pk>/evaluate/", recsys_fraud.fraud_evaluate, name="fraud-evaluate"),
    path(
        TEAM + "fraud-scores/<int:pk>/history.csv",
        recsys_fraud.history_csv,
        {"kind": "fraud"},
        name="fraud-history-csv",
    ),
    path(TEAM + FRAUD_EVALUATION, recsys_fraud.fraud_evaluation, name="fraud-evaluation"),
    path(TEAM + FRAUD_EVALUATION + "compare/", recsys_fraud_compare.fraud_compare, name="fraud-compare"),
    path(
        TEAM + "fraud-scores/comparisons/<int:pk>/",
        recsys_fraud_compare.fraud_comparison,
        name="fraud-comparison",
    ),
    path(
        TEAM + "fraud-scores/comparisons/<int:pk>/<str:table>.csv",
        recsys_fraud_compare.comparison_csv,
        {"kind": "fraud"},
        name="fraud-comparison-csv",
    ),
    path(
        TEAM + FRAUD_EVALUATION + "<str:table>.csv",
        recsys_fraud.dashboard_csv,
        {"kind": "fraud"},
        name="fraud-csv",
    ),
]
