"""Pages of recommendation sets and fraud score sets: upload forms, a set's page with its evaluations and
the form that starts one, and an evaluation's dashboard, each chart with its numbers beside it and a CSV
download of them; and the job state the pages poll.

Thin like the other pages: the team comes from `get_team_for_member` (404 to non-members, 403 to a viewer
asking to write), writes go through `monitoring.recsys_fraud`, reads through its `selectors`, and the
charts are laid out from the curves the jobs stored.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from evalcore.fraud import FraudOptions
from evalcore.recsys import RecsysOptions
from evalplatform.auth import SignedInRequest
from evalplatform.csvexport import csv_response
from evalplatform.jobs import JobStatus
from evalplatform.models import TeamMembership
from evalplatform.options import form_field, options_of
from evalplatform.teams import get_team_for_member
from monitoring.files.uploads import UploadError
from monitoring.models import (
    FraudScoreEvaluation,
    FraudScoreSet,
    RecommendationEvaluation,
    RecommendationSet,
)
from monitoring.recsys_fraud import charts, selectors
from monitoring.recsys_fraud import services as recsys_fraud
from monitoring.recsys_fraud.comparison_picker import compare_context

#: Rows of a long curve's table shown beside its chart (the CSV holds every stored point).
TABLE_ROWS = 40
#: The metrics a set's page shows for each of its evaluations.
RECSYS_HEADLINE = ("hit_rate", "ndcg_at_k", "catalog_coverage", "gini", "popularity_bias")
FRAUD_HEADLINE = ("detection_rate", "roc_auc", "pr_auc", "total_cost", "savings")
#: The figures a fraud dashboard shows in large type.
FRAUD_STATS = (*FRAUD_HEADLINE, "threshold", "realised_fpr", "precision_at_budget", "recall_at_budget")
CSV_HELP = "CSV with a header row; checked on its first lines before it is kept."


# --- forms --------------------------------------------------------------------------------------------


class RecsysOptionsForm(forms.Form):
    """`RecsysOptions` as a form: its fields, defaults, bounds and help come from the dataclass (as the
    API's and `eval_recsys`'s do); only the labels are the page's."""

    k = form_field(RecsysOptions, "k", label="Cutoff k")
    complete = form_field(RecsysOptions, "complete", label="Count users without a list as zero")
    head_share = form_field(RecsysOptions, "head_share", label="Short head's share")

    def options(self) -> RecsysOptions:
        return options_of(RecsysOptions, self.cleaned_data)


class FraudOptionsForm(forms.Form):
    """`FraudOptions` as a form, derived from the dataclass like `RecsysOptionsForm`."""

    target_fpr = form_field(FraudOptions, "target_fpr", label="Target FPR")
    threshold = form_field(FraudOptions, "threshold", label="Operating threshold")
    fp_cost = form_field(FraudOptions, "fp_cost", label="Cost of a false positive")
    fn_cost = form_field(FraudOptions, "fn_cost", label="Cost of a missed fraud")
    budget = form_field(FraudOptions, "budget", label="Alert budget")

    def options(self) -> FraudOptions:
        return options_of(FraudOptions, self.cleaned_data)


class RecsysUploadForm(RecsysOptionsForm):
    recs = forms.FileField(
        label="Recommendations", help_text="user,item,rank (rank 1 is the top). " + CSV_HELP
    )
    interactions = forms.FileField(label="Held-out interactions", help_text="user,item: the relevant items.")
    items = forms.FileField(
        required=False,
        label="Items",
        help_text="item[,category]: the catalog (every item, recommended or not).",
    )
    history = forms.FileField(
        required=False,
        label="History",
        help_text="user,item: earlier interactions (popularity, serendipity).",
    )
    name = forms.CharField(
        max_length=200, required=False, help_text="Defaults to the recommendations' file name."
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    evaluate = forms.BooleanField(required=False, initial=True, label="Evaluate at once with these options")
    field_order = ["recs", "interactions", "items", "history", "name", "description", "evaluate", "k", "complete",
                   "head_share"]  # fmt: skip


class FraudUploadForm(FraudOptionsForm):
    scores = forms.FileField(
        label="Scores", help_text="id,score,label[,amount][,entity,timestamp]; label 1 is fraud. " + CSV_HELP
    )
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file name.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    evaluate = forms.BooleanField(required=False, initial=True, label="Evaluate at once with these options")
    field_order = ["scores", "name", "description", "evaluate", "target_fpr", "threshold", "fp_cost", "fn_cost",
                   "budget"]  # fmt: skip


def _option_error(form: forms.Form, error: recsys_fraud.OptionError) -> None:
    form.add_error(error.field if error.field in form.fields else None, str(error))


# --- recommendations ----------------------------------------------------------------------------------


@login_required
def recsys_upload(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = RecsysUploadForm(request.POST or None, request.FILES or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            uploaded = recsys_fraud.recommendation_set_upload(
                team=membership.team, recs=data["recs"], interactions=data["interactions"], items=data["items"],
                history=data["history"], name=data["name"], description=data["description"],
                uploaded_by=request.user,
            )  # fmt: skip
        except UploadError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Uploaded the recommendation set {uploaded.name}.")
            if not data["evaluate"]:
                return redirect(uploaded.get_absolute_url())
            return _start_recsys(request, uploaded, form)
    return _page(request, "monitoring/recsys_upload.html", membership, {"form": form, "error": error})


def _start_recsys(
    request: SignedInRequest, chosen: RecommendationSet, form: RecsysOptionsForm
) -> HttpResponse:
    try:
        evaluation = recsys_fraud.recommendation_evaluation_create(
            recommendation_set=chosen, options=form.options(), created_by=request.user
        )
    except recsys_fraud.OptionError as exc:
        messages.error(request, f"The evaluation was not started: {exc}")
        return redirect(chosen.get_absolute_url())
    _say_started(request, evaluation)
    return redirect(evaluation.get_absolute_url())


def _say_started(request: HttpRequest, evaluation: RecommendationEvaluation | FraudScoreEvaluation) -> None:
    if evaluation.status == JobStatus.DONE:
        messages.info(request, "This set was already evaluated with these options: here it is.")
    else:
        messages.success(request, "Evaluation queued; the page follows the job.")


@login_required
@require_safe
def recsys_set(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    chosen = selectors.get_recommendation_set(team=membership.team, pk=pk)
    return _set_page(request, membership, chosen, RecsysOptionsForm())


@login_required
@require_POST
def recsys_evaluate(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    chosen = selectors.get_recommendation_set(team=membership.team, pk=pk)
    form = RecsysOptionsForm(request.POST)
    if form.is_valid():
        try:
            evaluation = recsys_fraud.recommendation_evaluation_create(
                recommendation_set=chosen, options=form.options(), created_by=request.user
            )
        except recsys_fraud.OptionError as exc:
            _option_error(form, exc)
        else:
            _say_started(request, evaluation)
            return redirect(evaluation.get_absolute_url())
    return _set_page(request, membership, chosen, form)


@login_required
@require_safe
def recsys_evaluation(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    evaluation = selectors.get_recommendation_evaluation(team=membership.team, pk=pk)
    context: dict[str, Any] = {"evaluation": evaluation, "owner": evaluation.recommendation_set}
    if evaluation.status == JobStatus.DONE:
        context.update(_recsys_dashboard(evaluation))
    context.update(compare_context(membership, evaluation))
    return _page(request, "monitoring/recsys_evaluation.html", membership, context)


def _recsys_dashboard(evaluation: RecommendationEvaluation) -> dict[str, Any]:
    lines = selectors.metric_lines(evaluation)
    values = {line.name: line.value for line in lines}
    curves = evaluation.curves
    tables = {name: selectors.dashboard_table(evaluation, name) for name in selectors.RECSYS_TABLES}
    popularity = curves.get("popularity")
    return {
        "lines": lines,
        "stats": [line for line in lines if line.name in RECSYS_HEADLINE],
        "values": values,
        "tables": tables,
        "lorenz_rows": selectors.evenly(tables["lorenz"].rows, TABLE_ROWS),
        "popularity_rows": [
            [charts.popularity_label(row[0], row[1]), *row[2:]] for row in tables["popularity"].rows
        ],
        "lorenz_figure": charts.lorenz_figure(curves["lorenz"], gini=values.get("gini")),
        "popularity_figure": charts.popularity_figure(popularity) if popularity else None,
    }


# --- fraud --------------------------------------------------------------------------------------------


@login_required
def fraud_upload(request: SignedInRequest, team: str) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    form = FraudUploadForm(request.POST or None, request.FILES or None)
    error = ""
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            uploaded = recsys_fraud.fraud_score_set_upload(
                team=membership.team, scores=data["scores"], name=data["name"], description=data["description"],
                uploaded_by=request.user,
            )  # fmt: skip
        except UploadError as exc:
            error = str(exc)
        else:
            messages.success(request, f"Uploaded the fraud score set {uploaded.name}.")
            if not data["evaluate"]:
                return redirect(uploaded.get_absolute_url())
            return _start_fraud(request, uploaded, form)
    return _page(request, "monitoring/fraud_upload.html", membership, {"form": form, "error": error})


def _start_fraud(request: SignedInRequest, chosen: FraudScoreSet, form: FraudOptionsForm) -> HttpResponse:
    try:
        evaluation = recsys_fraud.fraud_evaluation_create(
            score_set=chosen, options=form.options(), created_by=request.user
        )
    except recsys_fraud.OptionError as exc:
        messages.error(request, f"The evaluation was not started: {exc}")
        return redirect(chosen.get_absolute_url())
    _say_started(request, evaluation)
    return redirect(evaluation.get_absolute_url())


@login_required
@require_safe
def fraud_set(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    chosen = selectors.get_fraud_score_set(team=membership.team, pk=pk)
    return _set_page(request, membership, chosen, FraudOptionsForm())


@login_required
@require_POST
def fraud_evaluate(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team, write=True)
    chosen = selectors.get_fraud_score_set(team=membership.team, pk=pk)
    form = FraudOptionsForm(request.POST)
    if form.is_valid():
        try:
            evaluation = recsys_fraud.fraud_evaluation_create(
                score_set=chosen, options=form.options(), created_by=request.user
            )
        except recsys_fraud.OptionError as exc:
            _option_error(form, exc)
        else:
            _say_started(request, evaluation)
            return redirect(evaluation.get_absolute_url())
    return _set_page(request, membership, chosen, form)


@login_required
@require_safe
def fraud_evaluation(request: SignedInRequest, team: str, pk: int) -> HttpResponse:
    membership = get_team_for_member(request.user, team)
    evaluation = selectors.get_fraud_evaluation(team=membership.team, pk=pk)
    context: dict[str, Any] = {"evaluation": evaluation, "owner": evaluation.score_set}
    if evaluation.status == JobStatus.DONE:
        context.update(_fraud_dashboard(evaluation))
    context.update(compare_context(membership, evaluation))
    return _page(request, "monitoring/fraud_evaluation.html", membership, context)


def _fraud_dashboard(evaluation: FraudScoreEvaluation) -> dict[str, Any]:
    lines = selectors.metric_lines(evaluation)
    values = {line.name: line.value for line in lines}
    curves, summary = evaluation.curves, evaluation.summary
    operating = curves["operating"]
    tables = {name: selectors.dashboard_table(evaluation, name) for name in selectors.FRAUD_TABLES}
    ttd = curves.get("ttd")
    seconds = evaluation.score_set.time_unit == "seconds"
    # The histogram and its table in one readable unit (min, h, d for timestamps in seconds).
    ttd_unit, ttd_size = (
        charts.delay_unit(ttd, unit=evaluation.score_set.time_unit or "time units") if ttd else ("", 1.0)
    )
    rate = summary["n_positive"] / summary["n"] if summary["n"] else None
    return {
        "lines": lines,
        "stats": [line for line in lines if line.name in FRAUD_STATS],
        "values": values,
        "tables": tables,
        "operating": operating,
        "cheapest": min(
            zip(curves["cost"]["total_cost"], curves["cost"]["threshold"], strict=True), default=None
        ),
        "confusion": summary["confusion"],
        "roc_rows": selectors.evenly(tables["roc"].rows, TABLE_ROWS),
        "pr_rows": selectors.evenly(tables["pr"].rows, TABLE_ROWS),
        "cost_rows": selectors.evenly(tables["cost"].rows, TABLE_ROWS),
        "ttd": ttd,
        "time_unit": evaluation.score_set.time_unit or "time units",
        "ttd_unit": ttd_unit,
        "ttd_rows": [(low / ttd_size, high / ttd_size, count) for low, high, count in tables["ttd"].rows],
        "durations": {
            name: selectors.duration(values.get(name)) for name in ("mean_ttd", "median_ttd", "p95_ttd")
        }
        if seconds
        else None,
        "roc_figure": charts.roc_figure(curves["roc"], operating=operating, target_fpr=evaluation.target_fpr),
        "pr_figure": charts.pr_figure(curves["pr"], operating=operating, fraud_rate=rate),
        "cost_figure": charts.cost_figure(
            curves["cost"], operating=operating, flag_nothing_cost=summary["flag_nothing_cost"]
        ),
        "ttd_figure": charts.ttd_figure(ttd, unit=evaluation.score_set.time_unit or "time units")
        if ttd and ttd["counts"]
        else None,
    }


# --- shared -------------------------------------------------------------------------------------------


def _page(
    request: HttpRequest, template: str, membership: TeamMembership, context: dict[str, Any]
) -> HttpResponse:
    form = context.get("form")
    failed = bool(context.get("error")) or (form is not None and bool(form.errors))
    return render(
        request,
        template,
        {"team": membership.team, "membership": membership, **context},
        status=400 if failed else 200,
    )


def _set_page(
    request: HttpRequest,
    membership: TeamMembership,
    owner: RecommendationSet | FraudScoreSet,
    form: forms.Form,
) -> HttpResponse:
    recsys = isinstance(owner, RecommendationSet)
    template = "monitoring/recsys_set.html" if recsys else "monitoring/fraud_set.html"
    headline = RECSYS_HEADLINE if recsys else FRAUD_HEADLINE
    rows = []
    for evaluation in selectors.set_evaluations(owner):
        values = evaluation.metric_values()
        rows.append((evaluation, [values.get(name) for name in headline]))
    specs = selectors.specs(headline)
    history = selectors.set_history(owner, headline)
    context = {
        "owner": owner, "rows": rows, "form": form, "headline": specs, "history": history,
        "history_figure": charts.history_figure(specs, history) if history else None,
    }  # fmt: skip
    return _page(request, template, membership, context)


@login_required
@require_safe
def history_csv(request: SignedInRequest, team: str, kind: str, pk: int) -> HttpResponse:
    """The headline metrics of every evaluation of the sets of this one's name, as the set page's
    over-time chart draws them: one row per evaluation, oldest first, full precision."""
    membership = get_team_for_member(request.user, team)
    if kind == "recommendation":
        owner: Any = selectors.get_recommendation_set(team=membership.team, pk=pk)
        headline = RECSYS_HEADLINE
    else:
        owner = selectors.get_fraud_score_set(team=membership.team, pk=pk)
        headline = FRAUD_HEADLINE
    rows = [
        [point.observed_at.isoformat(), *point.values] for point in selectors.set_history(owner, headline)
    ]
    filename = f"{membership.team.slug}-{kind}-set{owner.pk}-history.csv"
    return csv_response(filename, ["evaluated_at", *headline], rows)


@login_required
@require_safe
def dashboard_csv(request: SignedInRequest, team: str, kind: str, pk: int, table: str) -> HttpResponse:
    """One dashboard table as CSV: the stored numbers at full precision, every stored point."""
    membership = get_team_for_member(request.user, team)
    if kind == "recommendation":
        evaluation: Any = selectors.get_recommendation_evaluation(team=membership.team, pk=pk)
    else:
        evaluation = selectors.get_fraud_evaluation(team=membership.team, pk=pk)
    found = selectors.dashboard_table(evaluation, table)
    filename = f"{membership.team.slug}-{kind}-evaluation{evaluation.pk}-{table}.csv"
    return csv_response(filename, found.header, found.rows)
