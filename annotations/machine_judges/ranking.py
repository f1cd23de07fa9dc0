"""How a machine judge ranks the linked team's runs beside people, on its calibration page: read from the
stored `MachineJudgeRanking` (written by the job that scores the team's leaderboard on the judge's labels,
in `monitoring`; this app only names that page's URL), never computed in a request.

Each run's mean measure on people's labels (a human qrels build of the project) and on the judge's, over
the topics both judged, with Kendall's tau-b and tau_AP between the two rankings.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_safe

from annotations import selectors
from annotations.models import MachineJudge, MachineJudgeRanking, QrelsBuild
from evalplatform.auth import SignedInRequest
from evalplatform.charts import figure, layout, scatter
from evalplatform.csvexport import csv_response
from evalplatform.jobs import JobStatus

#: The measure shown first when the ranking has it.
PREFERRED = "ndcg_cut_10"
HEADER = ["measure", "run_id", "run", "human", "machine", "human_rank", "machine_rank", "kendall_tau", "tau_ap",
          "topics", "qrels_version"]  # fmt: skip


def stored_ranking(judge: MachineJudge) -> MachineJudgeRanking | None:
    """The newest ranking of the project's own team's runs (newest build first); None without a team."""
    if judge.project.team_id is None:
        return None
    return (
        MachineJudgeRanking.objects.filter(judge=judge, team_id=judge.project.team_id)
        .select_related("build", "team")
        .order_by("-build__version", "-computed_at")
        .first()
    )


def judge_ranking(judge: MachineJudge, *, measure: str | None = None) -> dict[str, Any] | None:
    """The page's block: the chosen measure's runs, every measure's tau and tau_AP, and where it came from."""
    found = stored_ranking(judge)
    if found is None:
        return None
    measures: list[str] = found.data.get("measures", [])
    by_measure: dict[str, Any] = found.data.get("by_measure", {})
    chosen = (
        measure
        if measure in by_measure
        else PREFERRED
        if PREFERRED in by_measure
        else next(iter(measures), None)
    )
    latest = (
        QrelsBuild.objects.filter(project_id=judge.project_id, status=JobStatus.DONE, sources="human")
        .order_by("-version")
        .values_list("version", flat=True)
        .first()
    )
    runs = by_measure[chosen]["runs"] if chosen else []
    return {
        "row": found, "measure": chosen, "measures": measures, "runs": runs,
        "block": by_measure.get(chosen or "", {}), "latest_version": latest,
        "summary": [(name, by_measure[name]) for name in measures],
        "leaderboard_url": leaderboard_url(found, judge),
        "figure": ranking_figure(runs, chosen) if runs else None,
    }  # fmt: skip


def leaderboard_url(found: MachineJudgeRanking, judge: MachineJudge) -> str | None:
    """The team's leaderboard the ranking came from, showing this judge (the URL is `monitoring`'s, by name)."""
    qrels = found.data.get("qrels")
    try:
        return (
            reverse("monitoring:leaderboard", args=[found.team.slug, qrels]) + f"?judge={judge.pk}"
            if qrels
            else None
        )
    except NoReverseMatch:
        return None


def ranking_figure(runs: list[dict[str, Any]], measure: str | None) -> dict[str, Any]:
    """Each run's mean on the judge's labels against people's: on the diagonal, the judge agrees."""
    values = [v for run in runs for v in (run["human"], run["machine"]) if v is not None]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    points = scatter(
        x=[run["human"] for run in runs], y=[run["machine"] for run in runs], text=[run["name"] for run in runs],
        mode="markers+text", textposition="top center",
        hovertemplate="%{text}: people %{x:.4f}, machine %{y:.4f}<extra></extra>",
    )  # fmt: skip
    diagonal = scatter(x=[low, high], y=[low, high], mode="lines", line={"dash": "dot"}, hoverinfo="skip")
    return figure(
        [points, diagonal],
        layout(
            {"height": 360, "margin": {"l": 70, "r": 20, "t": 30, "b": 60}, "showlegend": False},
            xaxis={"title": {"text": f"{measure} on people's labels"}},
            yaxis={"title": {"text": f"{measure} on the judge's labels"}},
        ),
    )


def ranking_rows(data: dict[str, Any]) -> list[list[Any]]:
    """Every measure's runs as CSV rows (`HEADER`)."""
    version = data.get("qrels_version")
    return [
        [name, run["run"], run["name"], run["human"], run["machine"], run["human_rank"], run["machine_rank"],
         block["kendall_tau"], block["tau_ap"], block["topics"], version]
        for name, block in data.get("by_measure", {}).items()
        for run in block["runs"]
    ]  # fmt: skip


@login_required
@require_safe
def machine_judge_ranking_csv(request: SignedInRequest, slug: str, pk: int) -> HttpResponse:
    """The stored ranking comparison as CSV, every measure (project leads, as the judge's page)."""
    project = selectors.get_lead_project(request.user, slug)
    judge = get_object_or_404(MachineJudge.objects.select_related("project"), project=project, pk=pk)
    found = stored_ranking(judge)  # none stored yet: the header alone
    rows = ranking_rows(found.data) if found is not None else []
    return csv_response(f"{project.slug}-{judge.name}-v{judge.version}-ranking.csv", HEADER, rows)
