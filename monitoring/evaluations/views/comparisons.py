"""A comparison's page: for a pair of runs the sorted per-query differences, wins, ties and losses and the
test result; for every pair and measure the significance table with corrected p-values and paired effect
sizes; per measure the two-way ANOVA, Tukey's HSD (3+ runs) and discriminative power; for every pair of runs
the overlap of their lists (Jaccard@k, RBO, tau). Each table as CSV. All of it as the comparison job stored it."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from evalcore.comparison import mean_rule, paired_rule
from evalcore.comparison_extras import OVERLAP_FIGURES
from evalcore.stats import DEFAULT_BOOTSTRAP
from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.jobs import JobStatus
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import charts, selectors
from monitoring.evaluations.selectors import ComparisonView, QueryDifference
from monitoring.models import Comparison

#: Beyond this many queries the table beside the differences shows both ends only (the CSV has all).
DIFFERENCE_ROWS = 200


@login_required
@require_safe
def comparison_detail(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    comparison = selectors.get_comparison(team=membership.team, pk=pk, per_query=True)
    context: dict[str, Any] = {"team": membership.team, "membership": membership, "comparison": comparison}
    if comparison.status == JobStatus.DONE:
        view = selectors.comparison_view(comparison=comparison)
        if view.pairs:
            context.update(_pair_context(view, view.pair(request.GET.get("pair"))))
        context["view"] = view
        context["summary_rows"] = [
            (run, [view.summaries.get((run.pk, measure)) for measure in view.measures])
            for run in sorted(view.runs.values(), key=lambda run: run.pk)
        ]
        context["measure_columns"] = [selectors.measure_column(measure) for measure in view.measures]
        # Which queries each figure averages over, in the words compare_runs prints.
        context["means_over"] = mean_rule(complete=comparison.complete)
        context["pairs_over"] = paired_rule(complete=comparison.complete)
        context["bootstrap"] = DEFAULT_BOOTSTRAP
        context["overlaps"] = view.overlaps()
        context["many_systems"] = view.many_systems()
    return render(request, "monitoring/comparison_detail.html", context)


def _pair_context(view: ComparisonView, pair: Any) -> dict[str, Any]:
    column = selectors.measure_column(pair.measure)
    a, b = view.runs[pair.run_a_id], view.runs[pair.run_b_id]
    differences = view.differences(pair)
    measure_pairs = view.pairs_of(pair.measure)
    return {
        "pair": pair,
        "gap": abs(pair.diff),
        "run_a": a,
        "run_b": b,
        "column": column,
        "differences": differences,
        "difference_rows": _ends(differences),
        "differences_figure": charts.differences_figure(differences, column=column, a=a, b=b),
        "measure_pairs": measure_pairs,
        # Drawn only beside another pair (the page shows it then): none is built to be thrown away.
        "pairs_figure": (
            charts.pairs_figure(measure_pairs, column=column, runs=view.runs) if len(measure_pairs) > 1 else None
        ),
        "other_measures": [
            other for other in view.pairs
            if {other.run_a_id, other.run_b_id} == {pair.run_a_id, pair.run_b_id} and other.pk != pair.pk
        ],
    }  # fmt: skip


def _ends(rows: list[QueryDifference]) -> list[QueryDifference | None]:
    """All the rows, or the first and last halves of DIFFERENCE_ROWS with a None marking the gap."""
    if len(rows) <= DIFFERENCE_ROWS:
        return list(rows)
    half = DIFFERENCE_ROWS // 2
    return [*rows[:half], None, *rows[-half:]]


def _finished(request: HttpRequest, team: str, pk: int) -> tuple[str, Comparison, ComparisonView]:
    membership = get_team_for_member(request.user, team)
    comparison = selectors.get_comparison(team=membership.team, pk=pk, per_query=True)
    if comparison.status != JobStatus.DONE:
        raise Http404(f"Comparison {comparison.pk} is {comparison.status}; there is nothing to download yet.")
    return membership.team.slug, comparison, selectors.comparison_view(comparison=comparison)


@login_required
@require_safe
def comparison_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """The significance table: every pair of runs on every measure."""
    slug, comparison, view = _finished(request, team, pk)
    header = ["measure", "run_a_id", "run_a", "run_a_label", "run_b_id", "run_b", "run_b_label", "diff", "p_value",
              "p_adjusted", "significant", "wins", "ties", "losses", "cohens_dz", "hedges_g", "test", "correction",
              "alpha"]  # fmt: skip
    runs = view.runs
    rows = [
        [pair.measure, pair.run_a_id, runs[pair.run_a_id].name, runs[pair.run_a_id].label, pair.run_b_id,
         runs[pair.run_b_id].name, runs[pair.run_b_id].label, pair.diff, pair.p_value, pair.p_adjusted,
         pair.significant, pair.wins, pair.ties, pair.losses, pair.cohens_dz, pair.hedges_g, comparison.test,
         comparison.correction, comparison.alpha]
        for pair in view.pairs
    ]  # fmt: skip
    return csv_response(f"{slug}-comparison{comparison.pk}-significance.csv", header, rows)


@login_required
@require_safe
def pair_csv(request: SignedInRequest, team: str, pk: int, pair: int) -> HttpResponse:
    """One pair's per-query values and differences, sorted as the chart shows them."""
    slug, comparison, view = _finished(request, team, pk)
    found = view.pair(pair)
    a, b = view.runs[found.run_a_id].label, view.runs[found.run_b_id].label
    rows = [[row.qid, row.a, row.b, row.diff] for row in view.differences(found)]
    filename = f"{slug}-comparison{comparison.pk}-{found.measure}-per-query.csv"
    return csv_response(filename, ["qid", f"{found.measure} {a}", f"{found.measure} {b}", "diff"], rows)


def _runs_header(prefix: str) -> list[str]:
    return [f"{prefix}_id", prefix, f"{prefix}_label"]


def _run_cells(run: Any) -> list[Any]:
    return [run.pk, run.name, run.label]


@login_required
@require_safe
def overlap_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Every pair of runs' list overlap per query, then its means (qid `all`, trec_eval's layout)."""
    slug, comparison, view = _finished(request, team, pk)
    header = [*_runs_header("run_a"), *_runs_header("run_b"), "k", "p", "qid", "shared", *OVERLAP_FIGURES]
    rows: list[list[Any]] = []
    for row in view.overlaps():
        start = [*_run_cells(row.run_a), *_run_cells(row.run_b), comparison.overlap_k, comparison.rbo_p]
        rows += [[*start, query["qid"], query["shared"], *(query[name] for name in OVERLAP_FIGURES)]
                 for query in row.per_query()]  # fmt: skip
        rows.append([*start, "all", None, *(row.data["mean"][name] for name in OVERLAP_FIGURES)])
    return csv_response(f"{slug}-comparison{comparison.pk}-overlap.csv", header, rows)


@login_required
@require_safe
def tukey_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Tukey's HSD of every pair of runs on every measure (comparisons of three or more runs)."""
    slug, comparison, view = _finished(request, team, pk)
    header = ["measure", *_runs_header("run_a"), *_runs_header("run_b"), "mean_difference", "q", "p_value",
              "lower", "upper", "significant", "design", "mse", "df", "confidence"]  # fmt: skip
    rows = [
        [stats.measure, *_run_cells(a), *_run_cells(b), row["mean_difference"], row["q"], row["p_value"], row["lower"],
         row["upper"], row["significant"], stats.stats["tukey"]["design"], stats.stats["tukey"]["mse"],
         stats.stats["tukey"]["df"], stats.stats["tukey"]["confidence"]]
        for stats in view.many_systems() for a, b, row in stats.tukey_rows
    ]  # fmt: skip
    return csv_response(f"{slug}-comparison{comparison.pk}-tukey.csv", header, rows)


@login_required
@require_safe
def anova_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    """Per measure the two-way ANOVA table: systems, topics and the residual (its mean square the residual
    variance); comparisons of three or more runs."""
    slug, comparison, view = _finished(request, team, pk)
    header = ["measure", "source", "sum_sq", "df", "mean_sq", "f", "p_value"]
    rows: list[list[Any]] = []
    for stats in view.many_systems():
        anova = stats.stats.get("anova")
        if anova:
            rows += [[stats.measure, source, anova[source]["sum_sq"], anova[source]["df"], anova[source]["mean_sq"],
                      anova[source]["f"], anova[source]["p_value"]] for source in ("systems", "topics", "residual")]  # fmt: skip
    return csv_response(f"{slug}-comparison{comparison.pk}-anova.csv", header, rows)
