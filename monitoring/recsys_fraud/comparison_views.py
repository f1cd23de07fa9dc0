"""Pages comparing two evaluations of a kind: the "compare with…" picker of an evaluation's page, the
comparison's page (the two evaluations' curves overlaid, each chart with its numbers beside it and a CSV,
and the paired statistics the comparison job stored), and the CSV downloads.

Thin like `monitoring.recsys_fraud.views`: the team comes from `get_team_for_member` (404 to non-members,
403 to a viewer asking to start a comparison), writes go through `comparisons`, reads through `selectors`;
the job computes, the page lays out.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST, require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.jobs import JobStatus
from evalplatform.models import TeamMembership
from evalplatform.teams import get_team_for_member
from monitoring.models import (
    FraudComparison,
    FraudScoreEvaluation,
    RecommendationComparison,
)
from monitoring.recsys_fraud import comparison_charts as charts
from monitoring.recsys_fraud import comparisons, selectors
from monitoring.recsys_fraud import views as evaluation_views
from monitoring.recsys_fraud.comparison_picker import CompareForm, compare_context

# --- starting one -------------------------------------------------------------------------------------


@login_required
@require_POST
def fraud_compare(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    evaluation = selectors.get_fraud_evaluation(team=membership.team, pk=pk)
    form = CompareForm(request.POST, evaluation=evaluation)
    if form.is_valid():
        other, other_set = form.cleaned_data["other"], form.cleaned_data["other_set"]
        try:
            comparison = (
                comparisons.fraud_comparison_create(a=evaluation, b=other, created_by=request.user)
                if other is not None
                else comparisons.fraud_comparison_with_set(
                    a=evaluation, score_set=other_set, created_by=request.user
                )
            )
        except comparisons.ComparisonRefused as error:
            form.add_error("other", str(error))
        else:
            return _started(request, comparison)
    context: dict[str, Any] = {"evaluation": evaluation, "owner": evaluation.score_set}
    if evaluation.status == JobStatus.DONE:
        context.update(evaluation_views._fraud_dashboard(evaluation))
    context.update(compare_context(membership, evaluation, form))
    return _refused(request, "monitoring/fraud_evaluation.html", membership, context)


@login_required
@require_POST
def recsys_compare(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    evaluation = selectors.get_recommendation_evaluation(team=membership.team, pk=pk)
    form = CompareForm(request.POST, evaluation=evaluation)
    if form.is_valid():
        other, other_set = form.cleaned_data["other"], form.cleaned_data["other_set"]
        try:
            comparison = (
                comparisons.recommendation_comparison_create(a=evaluation, b=other, created_by=request.user)
                if other is not None
                else comparisons.recommendation_comparison_with_set(
                    a=evaluation, recommendation_set=other_set, created_by=request.user
                )
            )
        except comparisons.ComparisonRefused as error:
            form.add_error("other", str(error))
        else:
            return _started(request, comparison)
    context: dict[str, Any] = {"evaluation": evaluation, "owner": evaluation.recommendation_set}
    if evaluation.status == JobStatus.DONE:
        context.update(evaluation_views._recsys_dashboard(evaluation))
    context.update(compare_context(membership, evaluation, form))
    return _refused(request, "monitoring/recsys_evaluation.html", membership, context)


def _refused(
    request: HttpRequest, template: str, membership: TeamMembership, context: dict[str, Any]
) -> HttpResponse:
    """The evaluation's page again, the picker's message beside its field: a 400."""
    response = evaluation_views._page(request, template, membership, context)
    response.status_code = 400
    return response


def _started(request: HttpRequest, comparison: FraudComparison | RecommendationComparison) -> HttpResponse:
    if comparison.status == JobStatus.DONE:
        messages.info(request, "These two were already compared: here is the comparison.")
    else:
        messages.success(request, "Comparison queued; the page follows the job.")
    return redirect(comparison.get_absolute_url())


# --- fraud --------------------------------------------------------------------------------------------


def _fraud_numbers(evaluation: FraudScoreEvaluation) -> dict[str, Any]:
    """One model's figures beside the charts, from its stored rows and curves."""
    values, curves = evaluation.metric_values(), evaluation.curves
    cheapest = min(zip(curves["cost"]["total_cost"], curves["cost"]["threshold"], strict=True), default=None)
    return {"values": values, "operating": curves["operating"], "cheapest": cheapest}


def _metric_rows(a: Any, b: Any) -> list[list[Any]]:
    """Every metric of both evaluations: name, label, direction, A, B, A - B (None where undefined)."""
    first, second = selectors.metric_lines(a), {line.name: line.value for line in selectors.metric_lines(b)}
    rows = []
    for line in first:
        other = second.get(line.name)
        difference = line.value - other if line.value is not None and other is not None else None
        rows.append([line.name, line.spec.label, line.spec.direction, line.value, other, difference])
    return rows


def _curve_rows(
    a: FraudScoreEvaluation, b: FraudScoreEvaluation, name: str, columns: list[str]
) -> list[list[Any]]:
    rows = []
    for model, evaluation in (("A", a), ("B", b)):
        curve = evaluation.curves.get(name) or {}
        rows += [[model, *values] for values in zip(*(curve.get(c, []) for c in columns), strict=True)]
    return rows


FRAUD_CURVES = {"roc": ["fpr", "tpr", "threshold"], "pr": ["recall", "precision", "threshold"],
                "cost": ["threshold", "total_cost"]}  # fmt: skip
METRIC_HEADER = ["metric", "label", "direction", "a", "b", "difference"]


@login_required
@require_safe
def fraud_comparison(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    comparison = selectors.get_fraud_comparison(team=membership.team, pk=pk)
    a, b = comparison.evaluation_a, comparison.evaluation_b
    names = [f"A: {a.score_set.name}", f"B: {b.score_set.name}"]
    context: dict[str, Any] = {"comparison": comparison, "a": a, "b": b, "names": names}
    if a.status == JobStatus.DONE and b.status == JobStatus.DONE:
        fraud_rate = a.summary["n_positive"] / a.summary["n"] if a.summary.get("n") else None
        curves = [a.curves, b.curves]
        context.update(
            drawn=True, numbers=[_fraud_numbers(a), _fraud_numbers(b)], metric_rows=_metric_rows(a, b),
            roc_figure=charts.roc_overlay(curves, names),
            pr_figure=charts.pr_overlay(curves, names, fraud_rate=fraud_rate),
            cost_figure=charts.cost_overlay(curves, names),
        )  # fmt: skip
    return evaluation_views._page(request, "monitoring/fraud_comparison.html", membership, context)


# --- recommendations ----------------------------------------------------------------------------------

RECSYS_TEST_HEADER = ["metric", "label", "direction", "n", "mean_a", "mean_b", "difference", "ci_low", "ci_high",
                      "t", "p_t", "p_t_holm", "w", "p_wilcoxon", "cohens_dz", "hedges_g"]  # fmt: skip


def _popularity_header() -> list[str]:
    return ["popularity_low", "popularity_high", "catalog_items_a", "slots_a", "catalog_items_b", "slots_b"]


def _coverage_header() -> list[str]:
    return ["category", "items_a", "coverage_a", "slot_share_a", "items_b", "coverage_b", "slot_share_b"]


@login_required
@require_safe
def recsys_comparison(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    comparison = selectors.get_recommendation_comparison(team=membership.team, pk=pk)
    a, b = comparison.evaluation_a, comparison.evaluation_b
    names = [f"A: {a.recommendation_set.name}", f"B: {b.recommendation_set.name}"]
    context: dict[str, Any] = {"comparison": comparison, "a": a, "b": b, "names": names}
    if a.status == JobStatus.DONE and b.status == JobStatus.DONE:
        popularity = charts.popularity_rows([a.curves.get("popularity"), b.curves.get("popularity")])
        coverage = charts.coverage_rows([a.curves.get("coverage"), b.curves.get("coverage")])
        context.update(
            drawn=True, metric_rows=_metric_rows(a, b), popularity_rows=popularity, coverage_rows=coverage,
            gini=[a.metric_values().get("gini"), b.metric_values().get("gini")],
            lorenz_figure=charts.lorenz_overlay([a.curves, b.curves], names),
            popularity_figure=charts.popularity_overlay(popularity, names) if popularity else None,
            coverage_figure=charts.coverage_overlay(coverage, names) if len(coverage) > 1 else None,
            popularity_labels=[charts.popularity_label(row[0], row[1]) for row in popularity],
        )  # fmt: skip
    return evaluation_views._page(request, "monitoring/recsys_comparison.html", membership, context)


# --- CSV ----------------------------------------------------------------------------------------------

FRAUD_TABLES = ("metrics", "roc", "pr", "cost", "tests")
RECSYS_TABLES = ("metrics", "tests", "lorenz", "popularity", "coverage")


@login_required
@require_safe
def comparison_csv(request: SignedInRequest, team: str, kind: str, pk: int, table: str) -> HttpResponse:
    """One of a comparison's tables as CSV, at full precision (both evaluations' stored points)."""
    membership = get_team_for_member(request.user, team)
    if kind == "fraud":
        comparison: Any = selectors.get_fraud_comparison(team=membership.team, pk=pk)
        tables = FRAUD_TABLES
    else:
        comparison = selectors.get_recommendation_comparison(team=membership.team, pk=pk)
        tables = RECSYS_TABLES
    if table not in tables:
        raise Http404(f"No table {table!r} here.")
    header, rows = _table(comparison, kind, table)
    return csv_response(f"{membership.team.slug}-{kind}-comparison{comparison.pk}-{table}.csv", header, rows)


def _table(comparison: Any, kind: str, table: str) -> tuple[list[str], list[list[Any]]]:
    a, b = comparison.evaluation_a, comparison.evaluation_b
    if table == "tests":
        return _tests_table(comparison, kind)
    if a.status != JobStatus.DONE or b.status != JobStatus.DONE:
        raise Http404("Both evaluations must be done.")
    if table == "metrics":
        return METRIC_HEADER, _metric_rows(a, b)
    if kind == "fraud":
        return ["model", *FRAUD_CURVES[table]], _curve_rows(a, b, table, FRAUD_CURVES[table])
    if table == "lorenz":
        return ["model", "items", "exposure"], _curve_rows(a, b, "lorenz", ["items", "exposure"])
    if table == "popularity":
        return _popularity_header(), charts.popularity_rows(
            [a.curves.get("popularity"), b.curves.get("popularity")]
        )
    return _coverage_header(), charts.coverage_rows([a.curves.get("coverage"), b.curves.get("coverage")])


def _tests_table(comparison: Any, kind: str) -> tuple[list[str], list[list[Any]]]:
    result = comparison.result or {}
    if kind == "fraud":
        delong, interval = result.get("delong") or {}, result.get("bootstrap") or {}
        header = ["n", "n_positive", "n_negative", "auc_a", "auc_b", "difference", "std_error", "z", "p_value",
                  "ci_low", "ci_high", "confidence", "n_resamples"]  # fmt: skip
        if not delong:
            return header, []
        row = [result["n"], result["n_positive"], result["n_negative"], delong["auc_a"], delong["auc_b"],
               delong["difference"], delong["std_error"], delong["z"], delong["p_value"], interval["low"],
               interval["high"], interval["confidence"], interval["n_resamples"]]  # fmt: skip
        return header, [row]
    return RECSYS_TEST_HEADER, [
        [row.get(name) for name in RECSYS_TEST_HEADER] for row in result.get("metrics", [])
    ]
