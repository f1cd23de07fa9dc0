"""HTML views of annotator quality and qrels builds (project leads only).

Every view looks its project up through `selectors.get_project_for_member(..., role=LEAD)`: 404 to
non-members, 403 to annotators. The dashboard reads the precomputed `QualitySnapshot` and the builds'
rows; no figure is computed in a request. Actions are POST forms that redirect back.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST, require_safe

from annotations import qrels, selectors
from annotations.models import Project, ProjectMembership, QrelsBuild
from annotations.quality import charts, disagreements
from annotations.quality import services as quality
from annotations.quality.forms import OverrideForm, QrelsBuildForm
from evalcore.judging import QUALITY_AGREEMENT, REASONS
from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.models import TeamMembership
from series.models import Series

Role = ProjectMembership.Role


def _agreement_rows(agreement: dict[str, Any]) -> list[dict[str, Any]]:
    scopes = ("all", "reliable")
    return [
        {
            "label": label,
            **{scope: agreement.get(scope, {}).get("measures", {}).get(name) for scope in scopes},
        }
        for name, label in ((spec.name, spec.label) for spec in QUALITY_AGREEMENT)
    ]


def _figures(project: Project, snapshot: Any, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    labels = {int(level["grade"]): str(level["label"]) for level in project.scale}
    return [
        {
            "id": "figure-accuracy-speed",
            "label": "Accuracy on gold against median seconds per task, per annotator",
            "data": charts.accuracy_speed_figure(
                rows, min_accuracy=project.min_gold_accuracy, min_seconds=project.min_seconds_per_task
            ),
        },
        {
            "id": "figure-kappa",
            "label": "Cohen's kappa matrix of the annotator pairs",
            "data": charts.kappa_figure(snapshot.kappa),
        },
        {
            "id": "figure-labels",
            "label": "Grades given per annotator",
            "data": charts.label_distribution_figure(snapshot.label_distribution, labels=labels),
        },
    ]


def _kappa_links(project: Project, snapshot: Any, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What the heatmap's click handler needs (the drill-down URL and each name's user id), and the same
    links as a list of pairs for readers without JavaScript."""
    ids = {row["username"]: row["user_id"] for row in rows}
    names = [name for name in snapshot.kappa.get("annotators", []) if name in ids]
    kappa, shared = snapshot.kappa.get("unweighted", []), snapshot.kappa.get("shared_items", [])
    position = {name: i for i, name in enumerate(snapshot.kappa.get("annotators", []))}
    base = reverse("annotations:quality-disagreements", args=[project.slug])
    pairs = [
        {
            "a": a,
            "b": b,
            "kappa": kappa[position[a]][position[b]] if kappa else None,
            "shared": shared[position[a]][position[b]] if shared else None,
            "url": f"{base}?a={ids[a]}&b={ids[b]}",
        }
        for i, a in enumerate(names)
        for b in names[i + 1 :]
    ]
    return {"script": {"url": base, "ids": {name: ids[name] for name in names}}, "pairs": pairs}


def _override_actions(row: dict[str, Any]) -> list[dict[str, str]]:
    """The override buttons that change something for an annotator's row, as (decision, label, title).

    "Back to automatic" whenever a lead's decision stands; "Disqualify" for an included annotator and
    "Reinstate" for an excluded one, unless going back to automatic already does that (an annotator
    disqualified by a lead whom the thresholds would keep, or reinstated whom they would drop): the same
    decision twice, or a pin that changes nothing on the page, is not offered.
    """
    included, meets = bool(row["included"]), bool(row["meets_thresholds"])
    actions = []
    if included == meets:
        actions.append(
            {"decision": "exclude", "label": "Disqualify", "title": "Leave their labels out of qrels, whatever the thresholds say"}
            if included
            else {"decision": "include", "label": "Reinstate", "title": "Use their labels in qrels, whatever the thresholds say"}
        )  # fmt: skip
    if row["override"] != ProjectMembership.QualityOverride.AUTO:
        verdict = "use" if meets else "leave out"
        actions.append(
            {
                "decision": "auto",
                "label": "Back to automatic",
                "title": f"Let the thresholds decide: they {verdict} their labels "
                f"({REASONS.get(row['threshold_reason'], row['threshold_reason'])})",
            }
        )
    return actions


@login_required
@require_safe
def quality_dashboard(request: SignedInRequest, slug: str) -> HttpResponse:
    access = selectors.get_project_for_reader(request.user, slug)
    project = access.project
    snapshot = selectors.quality_snapshot(project=project)
    rows = (
        selectors.quality_rows(
            snapshot=snapshot, memberships=selectors.annotator_memberships(project=project)
        )
        if snapshot
        else []
    )
    for row in rows:
        row["actions"] = _override_actions(row)
    builds = list(selectors.qrels_builds(project=project)[:100])
    done = [build for build in builds if build.status == QrelsBuild.Status.DONE]
    return render(
        request,
        "annotations/quality.html",
        {
            "project": project,
            "snapshot": snapshot,
            "answers_since": selectors.answers_since(project=project, snapshot=snapshot),
            "rows": rows,
            "reasons": REASONS,
            "agreement_rows": _agreement_rows(snapshot.agreement) if snapshot else [],
            "figures": _figures(project, snapshot, rows) if snapshot else [],
            "kappa_links": _kappa_links(project, snapshot, rows) if snapshot else None,
            "recompute": selectors.latest_recompute(project=project),
            "builds": builds,
            "done_builds": done,
            "build_form": QrelsBuildForm.for_project(project),
            # A team reader (not a member of the project) sees the project's page and settings named,
            # not linked: both are its members' and leads' only (404 and 403 to a reader).
            "is_lead": access.is_lead,
            "series_url": _series_url(request.user, project),
        },
    )


def _series_url(user: Any, project: Project) -> str:
    """The page of the project's series (its agreement and gold figures over time), for members of the
    team it is linked to; "" otherwise (the series pages are the team's)."""
    if project.team_id is None:
        return ""
    member = user.is_superuser or TeamMembership.objects.filter(team_id=project.team_id, user=user).exists()
    series = Series.objects.filter(kind=Series.Kind.PROJECT, object_id=project.pk).only("pk").first()
    if not member or series is None:
        return ""
    return reverse("series:detail", args=[project.team.slug, series.pk])  # type: ignore[union-attr]


def _user_id(value: str | None) -> int | None:
    if value in (None, ""):
        return None
    try:
        return int(value)  # type: ignore[arg-type]
    except ValueError as exc:
        raise Http404("Choose annotators from the quality page.") from exc


@login_required
@require_GET
def quality_disagreements(request: SignedInRequest, slug: str) -> HttpResponse:
    """The items where annotator `a` disagrees with `b`, or with gold and the others (leads and team
    readers; the labels are the same ones the dashboard's figures summarise)."""
    access = selectors.get_project_for_reader(request.user, slug)
    project = access.project
    a, b = _user_id(request.GET.get("a")), _user_id(request.GET.get("b"))
    if a is None:
        raise Http404("Choose an annotator from the quality page.")
    found = disagreements.disagreement_list(project=project, a=a, b=b)
    query = urlencode({"a": a} if b is None else {"a": a, "b": b})
    csv_url = reverse("annotations:quality-disagreements-csv", args=[project.slug]) + "?" + query
    return render(
        request,
        "annotations/quality_disagreements.html",
        {
            "project": project,
            "found": found,
            "a_id": a,
            "b_id": b,
            "csv_url": csv_url,
            "is_lead": access.is_lead,
        },  # fmt: skip
    )


@login_required
@require_GET
def quality_disagreements_csv(request: SignedInRequest, slug: str) -> HttpResponse:
    """The page's list as CSV, every row (the page lists the first `MAX_ROWS`), for the same readers."""
    project = selectors.get_project_for_reader(request.user, slug).project
    a, b = _user_id(request.GET.get("a")), _user_id(request.GET.get("b"))
    if a is None:
        raise Http404("Choose an annotator from the quality page.")
    found = disagreements.disagreement_list(project=project, a=a, b=b, limit=None)
    names = "-".join(name for name in (found.a, found.b) if name)
    return csv_response(
        f"{project.slug}-disagreements-{names}.csv",
        disagreements.CSV_HEADER,
        disagreements.disagreement_table(found),
    )


@never_cache
@login_required
@require_GET
def quality_status(request: SignedInRequest, slug: str) -> JsonResponse:
    """The state of the latest recompute and of the recent and unfinished qrels builds, for the quality
    page's polling script (`annotations/quality.js`)."""
    project = selectors.get_project_for_reader(request.user, slug).project
    recompute = selectors.latest_recompute(project=project)
    return JsonResponse(
        {
            "recompute": {"id": recompute.pk, **recompute.state()} if recompute else None,
            "builds": [
                {"version": build.version, **build.state()}
                for build in selectors.qrels_builds_to_watch(project=project)
            ],
        }
    )


@login_required
@require_POST
def quality_recompute(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    if quality.quality_recompute_request(project_id=project.pk, force=True):
        messages.success(
            request, "Recomputing the quality figures; this page shows them when they are ready."
        )
    else:
        messages.error(
            request, "The task queue is unreachable: the figures will be recomputed once it is back."
        )
    return redirect("annotations:quality", project.slug)


@login_required
@require_POST
def annotator_override(request: SignedInRequest, slug: str, user_id: int) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    form = OverrideForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose include, exclude or auto.")
        return redirect("annotations:quality", project.slug)
    try:
        membership = quality.annotator_override_set(
            project=project, annotator=user_id, decision=form.cleaned_data["decision"], by=request.user
        )
    except ProjectMembership.DoesNotExist as exc:
        raise Http404("No such annotator in this project.") from exc
    verb = {"include": "Reinstated", "exclude": "Disqualified", "auto": "Back to the thresholds:"}
    messages.success(
        request,
        f"{verb[membership.quality_override]} {membership.user.get_username()}. Builds from now on follow.",
    )
    return redirect("annotations:quality", project.slug)


@login_required
@require_POST
def qrels_build_create(request: SignedInRequest, slug: str) -> HttpResponse:
    project = selectors.get_lead_project(request.user, slug)
    form = QrelsBuildForm.for_project(project, request.POST)
    if not form.is_valid():
        for field, errors in form.errors.items():
            messages.error(request, f"{field}: {' '.join(str(error) for error in errors)}")
        return redirect("annotations:quality", project.slug)
    params = dict(form.cleaned_data)
    params["use_adjudications"] = not params.pop("ignore_adjudications")
    build = qrels.qrels_build_create(project=project, created_by=request.user, **params)
    build.refresh_from_db()
    if build.status == QrelsBuild.Status.FAILED:
        messages.error(request, f"Build v{build.version} failed: {build.error}")
    else:
        messages.success(request, f"Build v{build.version} is queued; it appears here when done.")
    return redirect(reverse("annotations:quality", args=[project.slug]) + "#builds")


@login_required
@require_safe
def qrels_download(request: SignedInRequest, slug: str, version: int, fmt: str) -> HttpResponse:
    project = selectors.get_project_for_reader(request.user, slug).project
    if fmt not in qrels.EXPORT_FORMATS:
        raise Http404("Exports are trec or jsonl.")
    build = selectors.qrels_build_for(project=project, version=version)
    if build.status != QrelsBuild.Status.DONE:
        raise Http404(f"Build v{version} is {build.status}; there is nothing to download yet.")
    return qrels.qrels_export_response(build, fmt=fmt)  # type: ignore[arg-type]


@login_required
@require_safe
def qrels_diff(request: SignedInRequest, slug: str) -> HttpResponse:
    access = selectors.get_project_for_reader(request.user, slug)
    project = access.project
    try:
        old_version, new_version = int(request.GET["old"]), int(request.GET["new"])
    except (KeyError, ValueError) as exc:
        raise Http404("Choose two builds to compare.") from exc
    # Older first, whichever way round they were picked: the page reads "from v1 to v2", its pairs added,
    # removed and changed in the newer build.
    old_version, new_version = sorted((old_version, new_version))
    old = selectors.qrels_build_for(project=project, version=old_version)
    new = selectors.qrels_build_for(project=project, version=new_version)
    diff = selectors.qrels_build_diff(old=old, new=new)
    return render(
        request, "annotations/qrels_diff.html", {"project": project, "diff": diff, "is_lead": access.is_lead}
    )
