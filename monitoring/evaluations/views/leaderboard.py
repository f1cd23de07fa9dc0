"""The leaderboard of one qrels source: runs x chosen measures, with bootstrap CIs, sortable, as CSV."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.models import TeamMembership
from evalplatform.teams import get_team_for_member
from monitoring.evaluations import charts, selectors
from monitoring.evaluations.selectors import LeaderboardRow, MeasureColumn, MeasureResult
from monitoring.models import QrelsSource

#: `?sort=run` sorts by the run's name; any other value is a measure.
SORT_BY_NAME = "run"


@dataclass
class LeaderboardPage:
    qrels: QrelsSource
    available: list[str]  # every measure some run has on these qrels
    columns: list[MeasureColumn]  # the chosen ones, in order
    sort: str
    rows: list[LeaderboardRow]

    def cells(self, row: LeaderboardRow) -> list[MeasureResult | None]:
        return [row.results.get(column.key) for column in self.columns]

    def query(self, **changes: str) -> str:
        """This page's query string with some parameters changed."""
        params = {"sort": self.sort, "measures": ",".join(c.key for c in self.columns), **changes}
        return urlencode({key: value for key, value in params.items() if value})


def _chosen(request: HttpRequest, available: list[str]) -> list[str]:
    asked = [name.strip() for value in request.GET.getlist("measures") for name in value.split(",")]
    chosen = [name for name in dict.fromkeys(asked) if name in available]
    return chosen or available


def _page(request: HttpRequest, team: str, pk: int) -> tuple[TeamMembership, LeaderboardPage]:
    membership = get_team_for_member(request.user, team)
    qrels = selectors.get_qrels_source(team=membership.team, pk=pk)
    board = selectors.leaderboard(qrels=qrels)
    measures = _chosen(request, board.measures)
    sort = request.GET.get("sort", "")
    if sort != SORT_BY_NAME and sort not in board.measures:
        sort = measures[0] if measures else SORT_BY_NAME
    if sort == SORT_BY_NAME:
        rows = sorted(board.rows, key=lambda row: (row.run.name.lower(), row.run.pk))
    else:
        rows = board.sorted_by(sort)
    columns = [selectors.measure_column(key) for key in measures]
    return membership, LeaderboardPage(qrels, board.measures, columns, sort, rows)


@login_required
@require_safe
def leaderboard(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, page = _page(request, team, pk)
    charted = next((c for c in page.columns if c.key == page.sort), page.columns[0] if page.columns else None)
    context: dict[str, Any] = {
        "team": membership.team,
        "membership": membership,
        "page": page,
        "rows": [(rank, row, page.cells(row)) for rank, row in enumerate(page.rows, start=1)],
        "charted": charted,
        "figure": charts.leaderboard_figure(page.rows, column=charted) if charted and page.rows else None,
        "chart_rows": [(row.run, row.results.get(charted.key)) for row in page.rows] if charted else [],
        "csv_url": reverse("monitoring:leaderboard-csv", args=[membership.team.slug, page.qrels.pk])
        + "?"
        + page.query(),
        "headers": [(column, "?" + page.query(sort=column.key)) for column in page.columns],
        "name_sort_link": "?" + page.query(sort=SORT_BY_NAME),
    }
    return render(request, "monitoring/leaderboard.html", context)


@login_required
@require_safe
def leaderboard_csv(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership, page = _page(request, team, pk)
    header = ["rank", "run_id", "run", "label", "evaluation_id"]
    for column in page.columns:
        header += [column.key, f"{column.key}_ci_low", f"{column.key}_ci_high"]
    rows = []
    for rank, row in enumerate(page.rows, start=1):
        cells: list[Any] = [rank, row.run.pk, row.run.name, row.run.label, row.evaluation.pk]
        for result in page.cells(row):
            cells += [result.value, result.ci_low, result.ci_high] if result else [None, None, None]
        rows.append(cells)
    filename = f"{membership.team.slug}-leaderboard-qrels{page.qrels.pk}.csv"
    return csv_response(filename, header, rows)
