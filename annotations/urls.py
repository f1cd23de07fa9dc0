"""HTML URLs of the judging workflow, included at the site root."""

from django.urls import path

from annotations import views
from annotations.adjudication import views as adjudication_views
from annotations.machine_judges import import_views as machine_import_views
from annotations.machine_judges import llm_views
from annotations.machine_judges import ranking as machine_ranking
from annotations.machine_judges import views as machine_views
from annotations.quality import views as quality_views

app_name = "annotations"

urlpatterns = [
    # The judge page's answer first: a URL is tried against the patterns in order, and this is the one
    # request every answer on the page makes (matching the twenty-odd patterns before it took about as
    # long as its CSRF check, cProfile over the in-process benchmark).
    path(
        "projects/<slug:slug>/judge/<int:assignment_id>/next/",
        views.judge_answer_next,
        name="judge-answer-next",
    ),
    path("projects/", views.project_list, name="project-list"),
    path("projects/new/", views.project_create, name="project-create"),
    path("projects/<slug:slug>/", views.project_detail, name="project-detail"),
    path("projects/<slug:slug>/settings/", views.project_edit, name="project-edit"),
    path("projects/<slug:slug>/members/", views.member_add, name="member-add"),
    path("projects/<slug:slug>/answers.csv", views.answers_csv, name="answers-csv"),
    path("projects/<slug:slug>/answers.jsonl", views.answers_jsonl, name="answers-jsonl"),
    path("projects/<slug:slug>/members/<int:pk>/remove/", views.member_remove, name="member-remove"),
    path("projects/<slug:slug>/import/", views.project_import, name="project-import"),
    path("projects/<slug:slug>/import/<int:pk>/", views.import_job, name="import-job"),
    path("projects/<slug:slug>/guidelines/", views.guidelines, name="guidelines"),
    path("projects/<slug:slug>/comments/", views.project_comments, name="project-comments"),
    path("projects/<slug:slug>/judge/", views.judge, name="judge"),
    path("projects/<slug:slug>/judge/undo/", views.judge_undo, name="judge-undo"),
    path("projects/<slug:slug>/judge/continue/", views.judge_continue, name="judge-continue"),
    path("projects/<slug:slug>/judge/history/", views.judge_history, name="judge-history"),
    path(
        "projects/<slug:slug>/judge/history/<int:annotation_id>/change/",
        views.judge_change,
        name="judge-change",
    ),
    path(
        "projects/<slug:slug>/judge/history/<int:annotation_id>/comment/",
        views.judge_comment,
        name="judge-comment",
    ),
    path("projects/<slug:slug>/judge/<int:assignment_id>/", views.judge_answer, name="judge-answer"),
    path("projects/<slug:slug>/quality/", quality_views.quality_dashboard, name="quality"),
    path(
        "projects/<slug:slug>/quality/disagreements/",
        quality_views.quality_disagreements,
        name="quality-disagreements",
    ),
    path(
        "projects/<slug:slug>/quality/disagreements.csv",
        quality_views.quality_disagreements_csv,
        name="quality-disagreements-csv",
    ),
    path("projects/<slug:slug>/quality/status.json", quality_views.quality_status, name="quality-status"),
    path(
        "projects/<slug:slug>/quality/recompute/", quality_views.quality_recompute, name="quality-recompute"
    ),
    path(
        "projects/<slug:slug>/quality/annotators/<int:user_id>/override/",
        quality_views.annotator_override,
        name="annotator-override",
    ),
    path("projects/<slug:slug>/adjudication/", adjudication_views.adjudication_queue, name="adjudication"),
    path(
        "projects/<slug:slug>/adjudication/<int:task_id>/", adjudication_views.adjudicate, name="adjudicate"
    ),
    path(
        "projects/<slug:slug>/adjudication/adjudicators/<int:user_id>/",
        adjudication_views.adjudicator_allow,
        name="adjudicator-allow",
    ),
    path("projects/<slug:slug>/qrels/", quality_views.qrels_build_create, name="qrels-build"),
    path("projects/<slug:slug>/qrels/diff/", quality_views.qrels_diff, name="qrels-diff"),
    path(
        "projects/<slug:slug>/qrels/<int:version>/<str:fmt>/",
        quality_views.qrels_download,
        name="qrels-download",
    ),
    path("projects/<slug:slug>/machine-judges/", machine_views.machine_judges, name="machine-judges"),
    path("projects/<slug:slug>/machine-judges/<int:pk>/", machine_views.machine_judge, name="machine-judge"),
    path(
        "projects/<slug:slug>/machine-judges/click-log/",
        machine_import_views.click_log_upload,
        name="machine-judge-click-log",
    ),
    path(
        "projects/<slug:slug>/machine-judges/import-jobs/<int:pk>/",
        machine_import_views.machine_judge_import,
        name="machine-judge-import",
    ),
    path(
        "projects/<slug:slug>/machine-judges/<int:pk>/calibration.csv",
        machine_views.machine_judge_csv,
        name="machine-judge-csv",
    ),
    path(
        "projects/<slug:slug>/machine-judges/<int:pk>/ranking.csv",
        machine_ranking.machine_judge_ranking_csv,
        name="machine-judge-ranking-csv",
    ),
    path(
        "projects/<slug:slug>/machine-judges/<int:pk>/route/",
        machine_views.machine_judge_route,
        name="machine-judge-route",
    ),
]

# The LLM judge connector (issue 24.6; off unless LLM_JUDGE_ENABLED).
urlpatterns += [
    path("projects/<slug:slug>/machine-judges/llm/", llm_views.llm_judge, name="llm-judge"),
    path("projects/<slug:slug>/machine-judges/llm/<int:pk>/", llm_views.llm_judge_job, name="llm-judge-job"),
]
