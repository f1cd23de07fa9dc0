"""The reuse page of a qrels source: reusability (leave-one-out), annotator sensitivity and the planner.

The page reads the newest analyses the jobs stored; computing one is a POST (editors) that queues a job.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from evalplatform import charts
from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.evaluations.selectors import get_qrels_source
from monitoring.models import QrelsSource, ReuseAnalysis
from monitoring.reuse import services


def reusability_figure(result: dict[str, Any]) -> dict[str, Any]:
    """Full against left-out score of the main measure, one pair of bars per run."""
    m = result["measure"]
    runs = [row["run"] for row in result["runs"]]
    return charts.figure(
        [
            charts.bar(name="full qrels", x=runs, y=[row["full"][m] for row in result["runs"]]),
            charts.bar(name="left out", x=runs, y=[row["left_out"][m] for row in result["runs"]]),
        ],
        {"barmode": "group", "yaxis": {"title": {"text": m}}, "xaxis": {"title": {"text": "run"}}},
    )


def tau_bins(result: dict[str, Any]) -> list[tuple[float, int]]:
    """How many resamples gave each value of tau (rounded to 0.01), lowest first: the histogram's numbers."""
    counts = Counter(round(t, 2) for t in result.get("taus", []) if t is not None)
    return sorted(counts.items())


def tau_figure(bins: list[tuple[float, int]]) -> dict[str, Any]:
    return charts.figure(
        [charts.bar(x=[f"{tau:.2f}" for tau, _ in bins], y=[count for _, count in bins])],
        {"xaxis": {"title": {"text": "Kendall's tau"}}, "yaxis": {"title": {"text": "resamples"}}},
    )


def _source(request: SignedInRequest, team: str, pk: int, *, write: bool = False) -> tuple[Any, QrelsSource]:
    membership = get_team_for_member(request.user, team, write=write)
    return membership, get_qrels_source(team=membership.team, pk=pk)


@login_required
@require_GET
def qrels_reuse(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, source = _source(request, team, pk)
    reuse = services.latest_done(qrels=source, kind=ReuseAnalysis.Kind.REUSABILITY)
    sensitivity = services.latest_done(qrels=source, kind=ReuseAnalysis.Kind.SENSITIVITY)
    bins = tau_bins(sensitivity.result) if sensitivity else []
    context = {
        "team": membership.team,
        "membership": membership,
        "qrels": source,
        "is_build": source.kind == QrelsSource.Kind.BUILD,
        "reuse": reuse,
        "reuse_job": services.latest_analysis(qrels=source, kind=ReuseAnalysis.Kind.REUSABILITY),
        "sensitivity": sensitivity,
        "sensitivity_job": services.latest_analysis(qrels=source, kind=ReuseAnalysis.Kind.SENSITIVITY),
        "reuse_figure": reusability_figure(reuse.result) if reuse else None,
        "tau_bins": bins,
        "tau_figure": tau_figure(bins) if bins else None,
        **services.qrels_planner_context(qrels=source),
    }
    if reuse:
        m = reuse.result["measure"]
        context["measure"] = m
        context["reuse_rows"] = [_row(row, m) for row in reuse.result["runs"]]
        context["group_rows"] = [_row(row, m) for row in reuse.result["groups"]]
    return render(request, "monitoring/reuse/qrels_reuse.html", context)


def _row(row: dict[str, Any], m: str) -> dict[str, Any]:
    return {
        **row,
        "m_full": row["full"].get(m),
        "m_left": row["left_out"].get(m),
        "m_drop": row["drop"].get(m),
        "judged": row["full"].get("Judged@10"),
        "m_rel": None if row["relative_drop"].get(m) is None else 100 * row["relative_drop"][m],
    }


@login_required
@require_POST
def qrels_reuse_run(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, source = _source(request, team, pk, write=True)
    kind = request.POST.get("kind", "")
    params: dict[str, Any] = {}
    try:
        if kind == ReuseAnalysis.Kind.REUSABILITY and request.POST.get("depth"):
            params["depth"] = int(request.POST["depth"])
        if request.POST.get("measure"):
            params["measure"] = request.POST["measure"].strip()
        services.reuse_analysis_create(qrels=source, kind=kind, params=params, created_by=request.user)
    except (InputError, ValueError) as error:
        messages.error(request, f"The analysis was not started: {error}")
        return redirect("monitoring:qrels-reuse", membership.team.slug, source.pk)
    messages.success(request, "The analysis is queued; this page shows it once it is done.")
    return redirect("monitoring:qrels-reuse", membership.team.slug, source.pk)


@login_required
@require_GET
def qrels_reuse_csv(request: SignedInRequest, team: str, pk: int, analysis: str) -> HttpResponse:
    """The reusability table, the swap rates or the planner as CSV (a header alone before any analysis)."""
    membership, source = _source(request, team, pk)
    name = f"{membership.team.slug}-qrels{source.pk}-{analysis}.csv"
    if analysis == "planner":
        planner = services.qrels_planner_context(qrels=source)["planner"] or {"rows": []}
        header = ["min_diff", "alpha", "power", "variance", "topics_ttest", "topics_anova", "n_systems"]
        rows: list[list[Any]] = [
            [r["min_diff"], planner["alpha"], planner["power"], planner["variance"], r["ttest"], r["anova"],
             planner["n_systems"]]
            for r in planner["rows"]
        ]  # fmt: skip
        return csv_response(name, header, rows)
    if analysis not in ReuseAnalysis.Kind.values:
        raise Http404("Unknown table.")
    done = services.latest_done(qrels=source, kind=analysis)
    result = done.result if done else {}
    if analysis == ReuseAnalysis.Kind.SENSITIVITY:
        swaps = result.get("swaps", [])
        return csv_response(
            name, ["run_a", "run_b", "swap_rate"], [[s["run_a"], s["run_b"], s["swap_rate"]] for s in swaps]
        )
    runs = result.get("runs", []) + result.get("groups", [])
    measures = list(runs[0]["full"]) if runs else []
    header = ["group", "run", "unique", "unique_relevant", "rank_full", "rank_left_out"]
    header += [f"{m}_{part}" for m in measures for part in ("full", "left_out", "drop")]
    rows = [
        [r["group"] or "", r["run"], r["unique"], r["unique_relevant"], r["rank_full"], r["rank_left_out"]]
        + [v for m in measures for v in (r["full"][m], r["left_out"][m], r["drop"][m])]
        for r in runs
    ]
    return csv_response(name, header, rows)
