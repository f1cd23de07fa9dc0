"""HTML views of machine judges (project leads only: annotators never see a machine's labels or judges).

Every view looks its project up with `selectors.get_lead_project` (404 to non-members, 403 to
annotators) and its judge within that project. The calibration is computed on request by
`services.judge_calibration` (linear in the judge's labels, vectorised; see docs/machine-judges.md).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from annotations import selectors
from annotations.machine_judges import charts, llm_views, services
from annotations.machine_judges.forms import LabelsUploadForm, RouteForm
from annotations.machine_judges.import_views import recent_imports
from annotations.machine_judges.imports import labels_request
from annotations.machine_judges.ranking import judge_ranking
from annotations.machine_judges.routing import judge_route
from annotations.models import MachineJudge, MachineJudgeImport, MachineRouting, Project
from evalcore.errors import FormatError
from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response

#: The routed pairs the judge's page lists (the API lists them all).
ROUTED_SHOWN = 500


def judge_for(project: Project, pk: int) -> MachineJudge:
    return get_object_or_404(
        MachineJudge.objects.select_related("project", "created_by"), project=project, pk=pk
    )


@login_required
def machine_judges(request: SignedInRequest, slug: str) -> HttpResponse:
    """The project's machine judges, and the upload of a file of labels."""
    project = selectors.get_lead_project(request.user, slug)
    form = LabelsUploadForm(request.POST or None, request.FILES or None)
    error: FormatError | None = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            result = labels_request(
                project=project, upload=data["file"], name=data["name"], version=data["version"],
                kind=data["kind"], model=data["model"], configuration=data["configuration"],
                created_by=request.user,
            )  # fmt: skip
        except FormatError as exc:
            error = exc
        else:
            if isinstance(result, MachineJudgeImport):  # a large file: its page follows the job
                return redirect(result)
            messages.success(request, f"{data['file'].name}: {result.summary}")
            return redirect("annotations:machine-judge", project.slug, result.judge)
    judges = (
        MachineJudge.objects.filter(project=project)
        .select_related("project")
        .annotate(n_labels=Count("labels", distinct=True), n_routed=Count("routings", distinct=True))
    )
    return render(
        request,
        "annotations/machine_judges.html",
        {
            "project": project,
            "judges": judges,
            "form": form,
            "error": error,
            "llm": llm_views.page_context(project),
            "imports": recent_imports(project),
        },  # fmt: skip
        status=400 if error or form.errors else 200,
    )


@login_required
@require_safe
def machine_judge(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """A judge's calibration against gold and the human consensus, its routing form and routed pairs."""
    project = selectors.get_lead_project(request.user, slug)
    judge = judge_for(project, pk)
    calibration = services.judge_calibration(judge)
    blocks = [
        {"key": key, "title": title, "data": calibration[key], "figures": charts.figures(calibration[key], key),
         "tables": {name: charts.table(calibration[key], name) for name in charts.TABLES}}
        for key, title in (("consensus", "Against the human consensus"), ("gold", "Against gold"))
        if calibration[key] is not None
    ]  # fmt: skip
    routings = (
        MachineRouting.objects.filter(judge=judge)
        .select_related("topic", "document")
        .order_by("-routed_at", "id")
    )
    by_reason = dict(routings.order_by().values_list("reason").annotate(n=Count("id")))
    return render(
        request,
        "annotations/machine_judge.html",
        {
            "project": project, "judge": judge, "calibration": calibration, "blocks": blocks,
            "route_form": RouteForm(), "routings": routings[:ROUTED_SHOWN], "routed_total": sum(by_reason.values()),
            "by_reason": [(label, by_reason.get(value, 0)) for value, label in MachineRouting.Reason.choices],
            "ranking": judge_ranking(judge, measure=request.GET.get("ranking_measure")),
        },
    )  # fmt: skip


@login_required
@require_safe
def machine_judge_csv(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """One table of the calibration as CSV: `?against=consensus|gold&table=confusion|grades|topics`."""
    project = selectors.get_lead_project(request.user, slug)
    judge = judge_for(project, pk)
    against, name = request.GET.get("against", "consensus"), request.GET.get("table", "confusion")
    if against not in ("consensus", "gold") or name not in charts.TABLES:
        raise Http404("Choose against=consensus or gold, and table=confusion, grades or topics.")
    block = services.judge_calibration(judge)[against]
    if block is None:
        raise Http404(f"No pair is graded by both the judge and the {against}.")
    header, rows = charts.table(block, name)
    return csv_response(f"{project.slug}-{judge.name}-v{judge.version}-{against}-{name}.csv", header, rows)


@login_required
@require_POST
def machine_judge_route(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    judge = judge_for(project, pk)
    form = RouteForm(request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(error) for error in errors)}")
        return redirect(judge)
    done = judge_route(judge=judge, params=form.params(), by=request.user)
    parts = ", ".join(f"{n} {reason.replace('_', ' ')}" for reason, n in done.routed.items() if n)
    messages.success(
        request,
        f"Routed {done.total} pairs to people ({parts or 'none new'}); {done.tasks_created} new tasks in the judging queue"
        f", {done.judgments_added} answered tasks asked for one more judgment.",
    )
    return redirect(judge)
