"""HTML URLs of the evaluation service, included at the site root: everything lives under a team."""

from django.urls import path

from monitoring.views import comparisons, jobs, leaderboard, runs, teams, uploads

app_name = "monitoring"

TEAM = "teams/<slug:team>/"

urlpatterns = [
    path("teams/", teams.team_list, name="team-list"),
    path(TEAM, teams.team_home, name="team"),
    path(TEAM + "runs/new/", uploads.run_upload, name="run-upload"),
    path(TEAM + "runs/<int:pk>/", runs.run_detail, name="run-detail"),
    path(TEAM + "qrels/new/", uploads.qrels_add, name="qrels-add"),
    path(TEAM + "qrels/from-build/", uploads.qrels_from_build, name="qrels-from-build"),
    path(TEAM + "evaluations/new/", jobs.evaluation_create, name="evaluation-create"),
    path(TEAM + "evaluations/<int:pk>/per-query.csv", runs.evaluation_csv, name="evaluation-csv"),
    path(TEAM + "comparisons/new/", jobs.comparison_create, name="comparison-create"),
    path(TEAM + "comparisons/<int:pk>/", comparisons.comparison_detail, name="comparison-detail"),
    path(TEAM + "comparisons/<int:pk>/significance.csv", comparisons.comparison_csv, name="comparison-csv"),
    path(
        TEAM + "comparisons/<int:pk>/pairs/<int:pair>.csv", comparisons.pair_csv, name="comparison-pair-csv"
    ),
    path(TEAM + "leaderboard/<int:pk>/", leaderboard.leaderboard, name="leaderboard"),
    path(TEAM + "leaderboard/<int:pk>/leaderboard.csv", leaderboard.leaderboard_csv, name="leaderboard-csv"),
    path(TEAM + "jobs/<str:kind>/<int:pk>.json", jobs.job_state, name="job-state"),
]
