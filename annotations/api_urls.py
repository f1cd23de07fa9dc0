"""REST URLs of the judging workflow, included under /api/."""

from django.urls import path

from annotations import api, members_api
from annotations.adjudication import api as adjudication_api
from annotations.machine_judges import api as machine_api
from annotations.machine_judges import import_api as machine_import_api
from annotations.machine_judges import llm_api
from annotations.quality import api as quality_api

app_name = "annotations-api"

urlpatterns = [
    path("projects/", api.projects, name="projects"),
    path("projects/<slug:slug>/next/", api.next_task, name="next"),
    path("projects/<slug:slug>/submit/", api.submit, name="submit"),
    path("projects/<slug:slug>/skip/", api.skip, name="skip"),
    path("projects/<slug:slug>/undo/", api.undo, name="undo"),
    path("projects/<slug:slug>/progress/", api.progress, name="progress"),
    path("projects/<slug:slug>/break/", api.end_break, name="break"),
    path("projects/<slug:slug>/imports/", api.imports, name="imports"),
    path("projects/<slug:slug>/imports/<int:pk>/", api.import_job, name="import-job"),
    path("projects/<slug:slug>/overview/", api.overview, name="overview"),
    path("projects/<slug:slug>/members/", members_api.member_list, name="members"),
    path("projects/<slug:slug>/members/<int:pk>/", members_api.member_detail, name="member"),
    path("projects/<slug:slug>/comments/", api.comments, name="comments"),
    path("projects/<slug:slug>/quality/", quality_api.quality_snapshot, name="quality"),
    path("projects/<slug:slug>/quality/recompute/", quality_api.quality_recompute, name="quality-recompute"),
    path(
        "projects/<slug:slug>/quality/annotators/<str:username>/override/",
        quality_api.annotator_override,
        name="annotator-override",
    ),
    path("projects/<slug:slug>/adjudication/", adjudication_api.adjudication_queue, name="adjudication"),
    path("projects/<slug:slug>/adjudication/<int:task_id>/", adjudication_api.adjudicate, name="adjudicate"),
    path("projects/<slug:slug>/qrels/", quality_api.qrels_builds, name="qrels-builds"),
    path("projects/<slug:slug>/qrels/diff/", quality_api.qrels_diff, name="qrels-diff"),
    path("projects/<slug:slug>/qrels/<int:version>/", quality_api.qrels_build, name="qrels-build"),
    path(
        "projects/<slug:slug>/qrels/<int:version>/export/<str:fmt>/",
        quality_api.qrels_export,
        name="qrels-export",
    ),
    path("projects/<slug:slug>/machine-judges/", machine_api.machine_judges, name="machine-judges"),
    path("projects/<slug:slug>/machine-judges/<int:pk>/", machine_api.machine_judge, name="machine-judge"),
    path(
        "projects/<slug:slug>/machine-judges/click-logs/",
        machine_import_api.click_logs,
        name="machine-judge-click-logs",
    ),
    path(
        "projects/<slug:slug>/machine-judges/import-jobs/<int:pk>/",
        machine_import_api.machine_judge_import,
        name="machine-judge-import",
    ),
    path(
        "projects/<slug:slug>/machine-judges/<int:pk>/route/",
        machine_api.machine_judge_route,
        name="machine-judge-route",
    ),
    path(
        "projects/<slug:slug>/machine-judges/<int:pk>/routed/",
        machine_api.machine_judge_routed,
        name="machine-judge-routed",
    ),
]

# The LLM judge connector (issue 24.6; off unless LLM_JUDGE_ENABLED).
urlpatterns += [
    path("projects/<slug:slug>/llm-judge-jobs/", llm_api.llm_judge_jobs, name="llm-judge-jobs"),
    path("projects/<slug:slug>/llm-judge-jobs/<int:pk>/", llm_api.llm_judge_job, name="llm-judge-job"),
]
