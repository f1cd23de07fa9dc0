"""Input (`...In`) and output (`...Out`) shapes of the evaluation API. Inputs check what can be checked
without running a job (the team's objects, measure names, test options) so a 400 names the field."""

from __future__ import annotations

import re
from typing import Any

from django.db.models import Model
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema_field
from rest_framework import serializers

from evalcore.comparison import DEFAULT_MEASURES, mean_rule, paired_rule
from evalcore.jsonable import json_finite
from evalcore.metrics import FAMILIES
from evalplatform.errors import InputError
from evalplatform.jobs import JobStatus
from evalplatform.models import TeamMembership
from monitoring.editing.services import archived_refusal
from monitoring.evaluations import services as evaluations
from monitoring.evaluations.models import OVERLAP
from monitoring.evaluations.selectors import evaluation_results_attach, metric_spec
from monitoring.models import PARAMS, Comparison, QrelsSource, Run

FORMATS = ["trec", "tsv", "jsonl"]
DIRECTIONS = ["higher", "lower", "neutral"]
BUILD_REFERENCE = re.compile(r"^(?P<slug>[-\w]+)(?::v?(?P<version>\d+))?$")


def link(serializer: serializers.Field, name: str, *args: Any) -> str:
    """The URL of an API endpoint, absolute when the serializer has the request."""
    path = reverse(f"monitoring-api:{name}", args=args)
    request = serializer.context.get("request")
    return request.build_absolute_uri(path) if request is not None else path


# --- the metric registry ------------------------------------------------------------------------------


def range_field() -> serializers.ListField:
    return serializers.ListField(
        child=serializers.FloatField(allow_null=True),
        allow_null=True,
        min_length=2,
        max_length=2,
        help_text="[low, high], null for an open end; null when the metric has no natural bounds.",
    )


class MeasureSpecOut(serializers.Serializer):
    name = serializers.CharField(help_text="The registry's name of the metric (`ndcg_cut` for ndcg_cut_10).")
    label = serializers.CharField()
    family = serializers.ChoiceField(choices=list(FAMILIES))
    direction = serializers.ChoiceField(
        choices=DIRECTIONS, help_text="Which way is better; neutral for counts and diagnostics."
    )
    range = range_field()
    unit = serializers.CharField(allow_blank=True)


SPEC_FIELDS = tuple(MeasureSpecOut._declared_fields)


class MetricOut(MeasureSpecOut):
    definition = serializers.CharField()
    aliases = serializers.ListField(child=serializers.CharField())


def spec_of(measure: str) -> dict[str, Any] | None:
    """The registry's spec of a measure key (`ndcg_cut_10`, `P@10`) as JSON data, or None."""
    spec = metric_spec(measure)
    if spec is None:
        return None
    described = spec.describe()
    return {name: described[name] for name in SPEC_FIELDS}


def specs_of(measures: list[str]) -> dict[str, dict[str, Any] | None]:
    return {measure: spec_of(measure) for measure in measures}


# --- teams --------------------------------------------------------------------------------------------


class TeamOut(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    role = serializers.ChoiceField(
        choices=TeamMembership.Role.choices,
        help_text="Yours: viewers read, editors also upload and start jobs.",
    )
    url = serializers.SerializerMethodField()

    def get_url(self, team: Any) -> str:
        return link(self, "team", team.slug)


class JudgingProjectOut(serializers.Serializer):
    slug = serializers.SlugField()
    name = serializers.CharField()
    builds = serializers.ListField(
        child=serializers.IntegerField(),
        help_text='Versions of its finished qrels builds: POST qrels/ {"build": "<slug>:<version>"}.',
    )


class TeamDetailOut(TeamOut):
    runs = serializers.IntegerField()
    qrels = serializers.IntegerField()
    evaluations = serializers.IntegerField()
    comparisons = serializers.IntegerField()
    judging_projects = JudgingProjectOut(many=True, help_text="Judging projects linked to the team.")


# --- runs and qrels -----------------------------------------------------------------------------------


class ObjectRefOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()


class UploadOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    original_name = serializers.CharField(allow_blank=True, help_text="The file's name on upload.")
    format = serializers.CharField(allow_blank=True, help_text="trec, tsv or jsonl.")
    size = serializers.IntegerField(help_text="Bytes.")
    sha256 = serializers.CharField(allow_blank=True)
    num_queries = serializers.IntegerField(
        allow_null=True, help_text="Null until known: a large file is counted by its first evaluation."
    )
    num_rows = serializers.IntegerField(allow_null=True)
    uploaded_by = serializers.CharField(source="uploaded_by.username", allow_null=True, default=None)
    created_at = serializers.DateTimeField()
    archived = serializers.BooleanField(help_text="Hidden from the team's lists and leaderboards.")


class RunOut(UploadOut):
    tags = serializers.ListField(child=serializers.CharField())
    run_tag = serializers.CharField(allow_blank=True, help_text="The file's own tag (6th column).")
    url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()

    def get_url(self, run: Run) -> str:
        return link(self, "run", run.team.slug, run.pk)

    def get_download_url(self, run: Run) -> str:
        return link(self, "run-download", run.team.slug, run.pk)


class BuildRefOut(serializers.Serializer):
    project = serializers.SlugField(source="project.slug")
    version = serializers.IntegerField()
    content_hash = serializers.CharField(help_text="sha256 of the build's TREC export.")


class QrelsOut(UploadOut):
    kind = serializers.ChoiceField(choices=QrelsSource.Kind.choices)
    tags = serializers.ListField(child=serializers.CharField())
    build = BuildRefOut(allow_null=True, help_text="The judging build, for kind `build`.")
    url = serializers.SerializerMethodField()
    download_url = serializers.SerializerMethodField()
    leaderboard_url = serializers.SerializerMethodField()

    def get_url(self, source: QrelsSource) -> str:
        return link(self, "qrels-detail", source.team.slug, source.pk)

    def get_download_url(self, source: QrelsSource) -> str:
        return link(self, "qrels-download", source.team.slug, source.pk)

    def get_leaderboard_url(self, source: QrelsSource) -> str:
        return link(self, "leaderboard", source.team.slug, source.pk)


class TagsField(serializers.ListField):
    """Tags as a list, repeated form fields (`tags=a&tags=b`) or one comma-separated value (`a,b`)."""

    def __init__(self, **kwargs: Any) -> None:
        child = serializers.CharField(max_length=100, allow_blank=True)
        super().__init__(child=child, max_length=50, default=list, **kwargs)

    def to_internal_value(self, data: Any) -> list[str]:
        if isinstance(data, str):
            data = [data]
        values = super().to_internal_value(data)
        return [tag.strip() for value in values for tag in value.split(",") if tag.strip()]


class UploadIn(serializers.Serializer):
    name = serializers.CharField(
        max_length=200,
        required=False,
        allow_blank=True,
        help_text="Default: a run's own tag, else the file's name.",
    )
    description = serializers.CharField(required=False, allow_blank=True, default="")
    format = serializers.ChoiceField(
        choices=FORMATS, required=False, allow_blank=True, help_text="Default: detected from the file."
    )


class RunIn(UploadIn):
    file = serializers.FileField(allow_empty_file=True, help_text="A TREC run (qid Q0 docno rank score tag).")
    tags = TagsField(help_text="Repeated, or comma-separated.")


class QrelsIn(UploadIn):
    file = serializers.FileField(
        required=False, allow_empty_file=True, help_text="A qrels file (qid 0 docno rel). Or give `build`."
    )
    build = serializers.CharField(
        required=False,
        help_text="A qrels build of a judging project linked to the team: `<project-slug>:<version>`, or "
        "`<project-slug>` for its latest finished build.",
    )

    def validate_build(self, value: str) -> tuple[str, int | None]:
        match = BUILD_REFERENCE.match(value.strip())
        if match is None:
            raise serializers.ValidationError(
                "Give the build as <project-slug>:<version>, e.g. python-help:1."
            )
        version = match["version"]
        return match["slug"], None if version is None else int(version)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("file" in attrs) == ("build" in attrs):
            raise serializers.ValidationError(
                {"file": ["Upload a qrels file, or give a judging project's build (not both)."]}
            )
        return attrs


# --- jobs ---------------------------------------------------------------------------------------------


class TeamObjectField(serializers.PrimaryKeyRelatedField):
    """The id of one of the team's runs or qrels sources (the team comes in the serializer's context);
    with `unarchived`, one archived is refused saying so (new work takes only those not archived)."""

    def __init__(self, model: type[Model], what: str, *, unarchived: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("error_messages", {"does_not_exist": f"The team has no {what} {{pk_value}}."})
        super().__init__(queryset=model._default_manager.all(), **kwargs)
        self.what, self.unarchived = what, unarchived

    def get_queryset(self) -> Any:
        return super().get_queryset().filter(team=self.context["team"])

    def to_internal_value(self, data: Any) -> Any:
        found = super().to_internal_value(data)
        if self.unarchived and found.archived:
            raise serializers.ValidationError(archived_refusal(found, self.what))
        return found


def checked_measures(names: list[str]) -> list[str]:
    try:
        return evaluations.check_measures(names)
    except InputError as error:
        raise serializers.ValidationError(str(error)) from None


class EvaluationIn(serializers.Serializer):
    run = TeamObjectField(Run, "run", unarchived=True)
    qrels = TeamObjectField(QrelsSource, "qrels source", unarchived=True)
    measures = serializers.ListField(
        child=serializers.CharField(),
        default=list(DEFAULT_MEASURES),
        help_text="trec_eval or ir-measures names (`map`, `P_10`, `nDCG@10`). "
        f"Default: {', '.join(DEFAULT_MEASURES)}.",
    )
    rel_level = serializers.IntegerField(
        default=PARAMS.rel_level,
        min_value=-32768,
        max_value=32767,
        help_text="trec_eval -l: binary measures count rel >= this.",
    )
    complete = serializers.BooleanField(
        default=PARAMS.complete, help_text="trec_eval -c: qrels queries the run lacks count as 0."
    )

    def validate_measures(self, names: list[str]) -> list[str]:
        return checked_measures(names)


class ComparisonIn(serializers.Serializer):
    qrels = TeamObjectField(QrelsSource, "qrels source", unarchived=True)
    runs = serializers.ListField(
        child=TeamObjectField(Run, "run", unarchived=True), help_text="At least two run ids (not archived)."
    )
    measures = serializers.ListField(
        child=serializers.CharField(), required=False, help_text=f"Default: {', '.join(PARAMS.measures)}."
    )
    rel_level = serializers.IntegerField(default=PARAMS.rel_level, min_value=-32768, max_value=32767)
    complete = serializers.BooleanField(
        default=PARAMS.complete,
        help_text="Compare on every qrels query (missing ones count as 0), not only shared ones.",
    )
    test = serializers.ChoiceField(choices=Comparison.Test.choices, default=PARAMS.test)
    correction = serializers.ChoiceField(
        choices=Comparison.Correction.choices,
        default=PARAMS.correction,
        help_text="Over the whole family: every pair of runs on every measure.",
    )
    alpha = serializers.FloatField(
        default=PARAMS.alpha, help_text="Significance level, strictly between 0 and 1."
    )
    overlap_k = serializers.IntegerField(
        default=OVERLAP.k,
        min_value=1,
        max_value=1000,
        help_text="Depth of the lists' overlap (Jaccard@k, RBO, tau).",
    )
    rbo_p = serializers.FloatField(
        default=OVERLAP.p, help_text="RBO's persistence, strictly between 0 and 1."
    )

    def validate_rbo_p(self, p: float) -> float:
        if not 0 < p < 1:
            raise serializers.ValidationError("rbo_p must lie strictly between 0 and 1.")
        return p

    def validate_runs(self, runs: list[Run]) -> list[Run]:
        distinct = list({run.pk: run for run in runs}.values())
        if len(distinct) < 2:
            raise serializers.ValidationError("Choose at least two different runs to compare.")
        return distinct

    def validate_measures(self, names: list[str]) -> list[str]:
        return checked_measures(names)

    def validate_alpha(self, alpha: float) -> float:
        if not 0 < alpha < 1:
            raise serializers.ValidationError("alpha must lie strictly between 0 and 1.")
        return alpha


class JobStateOut(serializers.Serializer):
    """A job's state (`evalplatform.jobs.Job.state()`): poll `url` until status is done or failed."""

    status = serializers.ChoiceField(choices=JobStatus.choices)
    percent = serializers.IntegerField(allow_null=True, help_text="100 when done; null when unknown.")
    note = serializers.CharField(source="progress_note", allow_blank=True, help_text="What it is doing now.")
    error = serializers.CharField(allow_blank=True, help_text="Why it failed.")
    attempts = serializers.IntegerField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    seconds = serializers.FloatField(allow_null=True, help_text="How long the last attempt ran (so far).")
    created_by = serializers.CharField(source="created_by.username", allow_null=True, default=None)


class ResultOut(serializers.Serializer):
    measure = serializers.CharField(help_text="The measure's key, e.g. ndcg_cut_10 or P@10.")
    value = serializers.FloatField(allow_null=True, help_text="The aggregate, as trec_eval prints it.")
    ci_low = serializers.FloatField(allow_null=True, help_text="Percentile bootstrap CI of a mean.")
    ci_high = serializers.FloatField(allow_null=True)
    spec = serializers.SerializerMethodField()

    @extend_schema_field(MeasureSpecOut(allow_null=True))
    def get_spec(self, result: Any) -> dict[str, Any] | None:
        return spec_of(result.measure)


class EvaluationListOut(serializers.ListSerializer):
    """A page of evaluations, their results read from the metric table in one query."""

    def to_representation(self, data: Any) -> Any:
        rows = data.all() if hasattr(data, "all") else data
        return super().to_representation(evaluation_results_attach(rows))


class EvaluationOut(JobStateOut):
    id = serializers.IntegerField()
    name = serializers.CharField(allow_blank=True, help_text="Blank: named by its run and qrels.")
    description = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    archived = serializers.BooleanField()
    url = serializers.SerializerMethodField()
    per_query_url = serializers.SerializerMethodField()
    run = ObjectRefOut()
    qrels = ObjectRefOut()
    measures = serializers.ListField(child=serializers.CharField(), help_text="As requested.")
    rel_level = serializers.IntegerField()
    complete = serializers.BooleanField()
    confidence = serializers.FloatField(help_text="Of the confidence intervals.")
    num_queries = serializers.IntegerField(allow_null=True, help_text="Queries evaluated.")
    num_missing = serializers.IntegerField(allow_null=True, help_text="Qrels queries the run lacks.")
    results = ResultOut(many=True, help_text="One per measure key, once done.")

    class Meta:
        list_serializer_class = EvaluationListOut

    def get_url(self, evaluation: Any) -> str:
        return link(self, "evaluation", evaluation.team.slug, evaluation.pk)

    def get_per_query_url(self, evaluation: Any) -> str:
        return link(self, "evaluation-per-query", evaluation.team.slug, evaluation.pk)


class PerQueryRowOut(serializers.Serializer):
    qid = serializers.CharField()
    values = serializers.DictField(
        child=serializers.FloatField(allow_null=True), help_text="measure -> value"
    )


class PerQueryPageOut(serializers.Serializer):
    count = serializers.IntegerField(help_text="Queries in all pages.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    measures = serializers.ListField(child=serializers.CharField(), help_text="The measures in `values`.")
    results = PerQueryRowOut(many=True)


class ComparisonOut(JobStateOut):
    id = serializers.IntegerField()
    name = serializers.CharField(allow_blank=True, help_text="Blank: named by its number.")
    description = serializers.CharField(allow_blank=True)
    tags = serializers.ListField(child=serializers.CharField())
    url = serializers.SerializerMethodField()
    qrels = ObjectRefOut()
    runs = ObjectRefOut(many=True, source="runs.all")
    measures = serializers.ListField(child=serializers.CharField(), help_text="As requested.")
    rel_level = serializers.IntegerField()
    complete = serializers.BooleanField()
    test = serializers.ChoiceField(choices=Comparison.Test.choices)
    correction = serializers.ChoiceField(choices=Comparison.Correction.choices)
    alpha = serializers.FloatField()
    confidence = serializers.FloatField()
    overlap_k = serializers.IntegerField(help_text="Depth of the lists' overlap.")
    rbo_p = serializers.FloatField(help_text="RBO's persistence p.")

    def get_url(self, comparison: Any) -> str:
        return link(self, "comparison", comparison.team.slug, comparison.pk)


class SummaryOut(serializers.Serializer):
    run = ObjectRefOut()
    measure = serializers.CharField()
    mean = serializers.FloatField(
        help_text="Over `num_queries` queries, by the comparison's `means_over` rule."
    )
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    num_queries = serializers.IntegerField(
        allow_null=True, help_text="The queries the mean and CI average over."
    )


class RunPairOut(serializers.Serializer):
    measure = serializers.CharField()
    run_a = ObjectRefOut()
    run_b = ObjectRefOut()
    diff = serializers.FloatField(help_text="mean(a) - mean(b)")
    p_value = serializers.FloatField()
    p_adjusted = serializers.FloatField(help_text="Corrected over the whole family.")
    significant = serializers.BooleanField(help_text="p_adjusted < alpha")
    wins = serializers.IntegerField(help_text="Queries where a scored higher.")
    ties = serializers.IntegerField()
    losses = serializers.IntegerField(help_text="Queries where b scored higher.")
    cohens_dz = serializers.FloatField(
        allow_null=True, help_text="Cohen's d_z of a - b; null where undefined."
    )
    hedges_g = serializers.FloatField(allow_null=True, help_text="Hedges' g of a - b; null where undefined.")


class OverlapOut(serializers.Serializer):
    run_a_id = serializers.IntegerField()
    run_b_id = serializers.IntegerField()
    num_q = serializers.IntegerField(help_text="Queries both runs answer (those compared).")
    only_a = serializers.IntegerField(help_text="Queries only run a answers.")
    only_b = serializers.IntegerField(help_text="Queries only run b answers.")
    mean = serializers.DictField(
        child=serializers.FloatField(allow_null=True),
        help_text="jaccard, rbo_min, rbo_res, rbo_ext, kendall_tau, tau_ap, tau_ap_symmetric: each the mean over "
        "the queries where it is defined (null: nowhere).",
    )
    defined = serializers.DictField(child=serializers.IntegerField(), help_text="figure -> queries averaged.")


class AnovaEffectOut(serializers.Serializer):
    sum_sq = serializers.FloatField(allow_null=True)
    df = serializers.IntegerField()
    mean_sq = serializers.FloatField(allow_null=True)
    f = serializers.FloatField(allow_null=True)
    p_value = serializers.FloatField(allow_null=True)


class AnovaOut(serializers.Serializer):
    systems = AnovaEffectOut()
    topics = AnovaEffectOut()
    residual = AnovaEffectOut()
    residual_variance = serializers.FloatField(allow_null=True, help_text="MS_residual.")


class TukeyPairOut(serializers.Serializer):
    run_a_id = serializers.IntegerField()
    run_b_id = serializers.IntegerField()
    mean_difference = serializers.FloatField(allow_null=True)
    q = serializers.FloatField(allow_null=True, help_text="Studentized range statistic.")
    p_value = serializers.FloatField(allow_null=True)
    lower = serializers.FloatField(allow_null=True)
    upper = serializers.FloatField(allow_null=True)
    significant = serializers.BooleanField()


class TukeyOut(serializers.Serializer):
    design = serializers.CharField()
    mse = serializers.FloatField(allow_null=True)
    df = serializers.IntegerField()
    confidence = serializers.FloatField()
    pairs = TukeyPairOut(many=True)


class PowerPairOut(serializers.Serializer):
    run_a_id = serializers.IntegerField()
    run_b_id = serializers.IntegerField()
    p_value = serializers.FloatField(allow_null=True, help_text="Bootstrap ASL.")


class DiscriminativePowerOut(serializers.Serializer):
    test = serializers.CharField()
    alpha = serializers.FloatField()
    n_resamples = serializers.IntegerField()
    seed = serializers.IntegerField()
    pairs = serializers.IntegerField()
    significant = serializers.IntegerField()
    share = serializers.FloatField(allow_null=True)
    min_significant_difference = serializers.FloatField(allow_null=True)
    p_values = PowerPairOut(many=True)


class ManySystemsOut(serializers.Serializer):
    anova = AnovaOut(allow_null=True)
    tukey = TukeyOut(allow_null=True)
    discriminative_power = DiscriminativePowerOut(allow_null=True)
    notes = serializers.ListField(child=serializers.CharField())


class ComparisonDetailOut(ComparisonOut):
    num_queries = serializers.SerializerMethodField(help_text="Queries of the paired tests (`pairs_over`).")
    means_over = serializers.SerializerMethodField(help_text="The queries each run's mean averages over.")
    pairs_over = serializers.SerializerMethodField(help_text="The queries the paired tests compare.")
    specs = serializers.SerializerMethodField(help_text="measure key -> its registry spec (null if unknown).")
    summaries = SummaryOut(many=True, help_text="Each run's mean of each measure with its CI, once done.")
    pairs = RunPairOut(
        many=True, source="pairs.all", help_text="Every pair of runs on every measure, once done."
    )
    overlap = OverlapOut(
        many=True, help_text="Every pair of runs' list overlap (means; per query in the CSV)."
    )
    many_systems = serializers.DictField(
        child=ManySystemsOut(),
        help_text="measure -> two-way ANOVA and Tukey's HSD (null with fewer than 3 runs) and discriminative power.",
    )

    def get_num_queries(self, comparison: Comparison) -> int:
        return len(comparison.qids)

    def get_means_over(self, comparison: Comparison) -> str:
        return mean_rule(complete=comparison.complete)

    def get_pairs_over(self, comparison: Comparison) -> str:
        return paired_rule(complete=comparison.complete)

    @extend_schema_field(serializers.DictField(child=MeasureSpecOut(allow_null=True)))
    def get_specs(self, comparison: Comparison) -> dict[str, dict[str, Any] | None]:
        keys = dict.fromkeys(summary.measure for summary in comparison.summaries)
        return specs_of(list(keys))


class ValueOut(serializers.Serializer):
    value = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)


class CoverageOut(serializers.Serializer):
    computed = serializers.BooleanField(
        help_text="False for an evaluation made before coverage was stored: its values are null, not 0."
    )
    judged_10 = ValueOut(allow_null=True, help_text="Judged@10 (ir-measures' definition) with its CI.")
    judged_100 = ValueOut(allow_null=True, help_text="Judged@100 with its CI.")
    unjudged_10 = serializers.FloatField(
        allow_null=True, help_text="The unjudged share of the top 10: 1 - Judged@10."
    )
    unjudged_100 = serializers.FloatField(allow_null=True, help_text="1 - Judged@100.")
    warning = serializers.BooleanField(help_text="Judged@10 under 0.9 (`evalcore.coverage.JUDGED_WARNING`).")


class SourcedValueOut(ValueOut):
    evaluation = serializers.IntegerField(
        help_text="The evaluation the value comes from: the run's newest finished one on these qrels that "
        "has the measure (an older one where a newer evaluation did not compute it)."
    )


class LeaderboardRowOut(serializers.Serializer):
    rank = serializers.IntegerField(help_text="By the sort measure; runs without it come last.")
    run = ObjectRefOut()
    label = serializers.CharField(
        help_text="The run's name, with its upload time (and id) where another run on the board has that name."
    )
    tags = serializers.ListField(child=serializers.CharField())
    evaluation = serializers.IntegerField(help_text="The run's newest finished evaluation on these qrels.")
    finished_at = serializers.DateTimeField()
    results = serializers.DictField(
        child=SourcedValueOut(),
        help_text="measure key (one name per measure: `nDCG@10` is `ndcg_cut_10`) -> value with its CI and "
        "the evaluation it comes from.",
    )
    coverage = CoverageOut(help_text="How far the run's top ranks are judged, whatever `measures` holds.")
    machine_judge = serializers.DictField(
        child=serializers.DictField(), required=False,
        help_text="With `machine_judge`: measure -> {human_only, machine_only, ppi, ppi_plus_plus} (each "
        "{estimate, ci_low, ci_high, std_error}, null where undefined), lambda, queries, human_queries.",
    )  # fmt: skip


class EstimateOut(serializers.Serializer):
    estimate = serializers.FloatField(allow_null=True)
    ci_low = serializers.FloatField(allow_null=True)
    ci_high = serializers.FloatField(allow_null=True)
    std_error = serializers.FloatField(allow_null=True)


class HumanSampleOut(serializers.Serializer):
    queries = serializers.ListField(child=serializers.CharField(), help_text="The human sample's query ids.")
    random = serializers.BooleanField(help_text="Drawn at random by the job (sample=random).")
    random_over_machine = serializers.BooleanField(
        help_text="... and so a random sample of every query the machine judged (people judged them all)."
    )
    machine_queries = serializers.IntegerField(help_text="Queries the machine judged (N).")
    human_judged = serializers.IntegerField(help_text="Of those, the ones people judged in these qrels.")
    outside_machine = serializers.IntegerField(help_text="Human-judged queries the machine did not judge.")
    rule = serializers.CharField(help_text="How the sample was formed, in words.")


class MachineJudgeEvaluationOut(JobStateOut):
    id = serializers.IntegerField()
    judge = ObjectRefOut(source="judge_ref")
    qrels = serializers.IntegerField(source="qrels_id")
    sample = serializers.CharField()
    sample_size = serializers.IntegerField()
    seed = serializers.IntegerField()
    alpha = serializers.FloatField()
    estimand = serializers.CharField()
    measures = serializers.ListField(child=serializers.CharField(), help_text="Estimated, once done.")
    human_sample = HumanSampleOut(allow_null=True, source="human_sample_or_none")


class MachineJudgeBoardOut(serializers.Serializer):
    judge = ObjectRefOut()
    job = MachineJudgeEvaluationOut(
        allow_null=True, help_text="The newest done scoring, whose figures rows hold."
    )
    stale = serializers.BooleanField(help_text="The judge's labels or the evaluated runs changed since.")


class LeaderboardOut(serializers.Serializer):
    qrels = ObjectRefOut()
    measures = serializers.ListField(child=serializers.CharField())
    specs = serializers.DictField(child=MeasureSpecOut(allow_null=True))
    sort = serializers.CharField(allow_null=True, help_text="The measure the rows are ranked by.")
    rows = LeaderboardRowOut(many=True)
    machine_judge = MachineJudgeBoardOut(required=False, help_text="With `machine_judge`: the scoring shown.")


# --- the judging loop: gaps and version diffs ---------------------------------------------------------


class GapsIn(serializers.Serializer):
    depth = serializers.IntegerField(
        required=False, default=10, min_value=1, max_value=1000, help_text="The run's top k per query."
    )


class GapsOut(serializers.Serializer):
    run = serializers.IntegerField()
    qrels = serializers.IntegerField()
    project = serializers.CharField(help_text="The judging project the tasks went to (its slug).")
    depth = serializers.IntegerField()
    unjudged = serializers.IntegerField(help_text="Distinct unjudged (qid, docno) pairs in the run's top k.")
    created = serializers.IntegerField(help_text="Tasks added.")
    existing = serializers.IntegerField(help_text="Pairs that were tasks already (none added twice).")
    missing_topic = serializers.IntegerField(help_text="Skipped: a topic the project lacks.")
    missing_document = serializers.IntegerField(help_text="Skipped: a document the project lacks.")
    prioritised = serializers.IntegerField(
        help_text="Tasks given the urgent priority: served before the project's pools' tasks (a project "
        "that serves by priority only)."
    )


class GapsRequestOut(serializers.Serializer):
    id = serializers.IntegerField(source="pk", help_text="Poll GET /api/teams/<team>/gaps-requests/<id>/.")
    run = serializers.IntegerField(source="run_id")
    qrels = serializers.IntegerField(source="qrels_id")
    depth = serializers.IntegerField()
    state = serializers.SerializerMethodField(help_text="The job's status, progress and error.")
    result = serializers.SerializerMethodField(help_text="What it did, once done (null before).")

    def get_state(self, job: Any) -> dict[str, Any]:
        return json_finite(job.state())  # type: ignore[no-any-return]

    @extend_schema_field(GapsOut(allow_null=True))
    def get_result(self, job: Any) -> dict[str, Any] | None:
        return GapsOut(job.result).data if job.status == "done" else None  # type: ignore[return-value]


class CoverageQueuedOut(serializers.Serializer):
    queued = serializers.IntegerField(help_text="Evaluations queued (or found) to compute the coverage.")
    evaluations = serializers.ListField(child=serializers.IntegerField(), help_text="Their ids: poll them.")


class DiffRunOut(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    label = serializers.CharField()


class DiffRowOut(serializers.Serializer):
    run = DiffRunOut()
    old = ValueOut(allow_null=True)
    new = ValueOut(allow_null=True)
    change = serializers.FloatField(allow_null=True, help_text="new - old.")
    old_rank = serializers.IntegerField(
        allow_null=True, help_text="Competition rank (ties share the better)."
    )
    new_rank = serializers.IntegerField(allow_null=True)
    rank_change = serializers.IntegerField(allow_null=True, help_text="old rank - new rank: positive is up.")


class MeasureDiffOut(serializers.Serializer):
    measure = serializers.CharField()
    runs_compared = serializers.IntegerField(help_text="Runs with a value on both sources.")
    kendall_tau = serializers.FloatField(allow_null=True, help_text="Kendall's tau-b of the two rankings.")
    tau_ap = serializers.FloatField(allow_null=True, help_text="tau_ap, the new ranking as the truth.")
    rows = DiffRowOut(many=True)


class LeaderboardDiffOut(serializers.Serializer):
    to = ObjectRefOut(help_text="The new qrels source.")
    measures = MeasureDiffOut(many=True)

    def get_fields(self) -> dict[str, Any]:
        # `from` (the old qrels source) is a Python keyword: declared here, first.
        old = ObjectRefOut(allow_null=True, help_text="The old qrels source (null: no earlier version).")
        return {"from": old, **super().get_fields()}


# --- errors -------------------------------------------------------------------------------------------


class EvaluationErrorOut(serializers.Serializer):
    detail = serializers.CharField()


NOT_FOUND = OpenApiResponse(
    EvaluationErrorOut, description="No such team for you (you are not a member), or no such object in it."
)
FORBIDDEN = OpenApiResponse(
    EvaluationErrorOut, description="You are a viewer: only the team's editors upload, delete and start jobs."
)
FIELD_ERRORS = OpenApiResponse(
    OpenApiTypes.OBJECT,
    description="Bad input: each field at fault with its reasons.",
    examples=[OpenApiExample("A bad line", value={"file": ["bm25.run:2: score is not a number"]})],
)
