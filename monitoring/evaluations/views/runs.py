"""A run's page: its evaluations, and for one of them the per-query distribution of a measure and the
worst queries; the per-query values as CSV."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.jobs import JobStatus
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import charts, selectors
from monitoring.fusion.selectors import run_fusion
from monitoring.models import Evaluation

#: How many of the worst queries the page lists.
WORST_QUERIES = 20


@login_required
@require_safe
def run_detail(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    run = selectors.get_run(team=membership.team, pk=pk)
    evaluations = selectors.run_evaluations(run=run)
    measure = request.GET.get("measure", "")
    chosen = selectors.chosen_evaluation(
        run=run, evaluations=evaluations, pk=request.GET.get("evaluation"), measure=measure
    )
    context: dict[str, Any] = {
        "team": membership.team,
        "membership": membership,
        "run": run,
        "evaluations": evaluations,
        "chosen": chosen,
        "fusion": run_fusion(run=run),
    }
    if chosen is not None and chosen.status == JobStatus.DONE:
        context.update(_distribution(chosen, evaluations, measure))
    return render(request, "monitoring/run_detail.html", context)


def _distribution(evaluation: Evaluation, evaluations: list[Evaluation], measure: str) -> dict[str, Any]:
    """The chosen evaluation's measure (its first by default): value, histogram and worst queries; and
    the measures to pick from, one per measure, with those of older evaluations on the same qrels."""
    if not evaluation.results:
        return {}
    links = selectors.run_measures(chosen=evaluation, evaluations=evaluations)
    key = selectors.measure_key(measure)
    own = [link for link in links if link.evaluation.pk == evaluation.pk]
    picked = next((link for link in own if link.key == key), own[0])
    stored = next(r for r in evaluation.results if r.measure == picked.stored)
    result = replace(stored, measure=picked.key)
    per_query = evaluation.per_query.get(picked.stored, [])
    column = selectors.measure_column(result.measure)
    bins = selectors.histogram(per_query, column=column)
    return {
        "results": own,
        "elsewhere": [link for link in links if link.evaluation.pk != evaluation.pk],
        "result": result,
        "column": column,
        "bins": bins,
        "worst": selectors.worst_queries(evaluation.qids, per_query, column=column, limit=WORST_QUERIES),
        "figure": charts.histogram_figure(
            bins, column=column, run=evaluation.run, integers=selectors.integer_valued(per_query)
        )
        if bins
        else None,
    }


@login_required
@require_safe
def evaluation_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Every per-query value of a finished evaluation: one row per query, one column per measure."""
    membership = get_team_for_member(request.user, team)
    evaluation = selectors.get_evaluation(team=membership.team, pk=pk, per_query=True)
    measures, rows = selectors.per_query_rows(evaluation)
    filename = f"{membership.team.slug}-evaluation{evaluation.pk}-per-query.csv"
    return csv_response(filename, ["qid", *measures], rows)
