"""Fusions of a team's runs: start one (a job on the worker; editors), list them, poll one. Once done,
`result` is the fused run, a run of the team like any upload (`/runs/<id>/`), evaluable and comparable."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import api_view
from rest_framework.request import Request
from rest_framework.response import Response

from evalcore.fusion import METHOD_ALIASES, METHODS, NORMS
from evalplatform.errors import InputError
from evalplatform.teams import get_team_for_member
from monitoring.common.pagination import PAGE_PARAMETERS, page_of, paginate
from monitoring.common.serializers import (
    FIELD_ERRORS,
    FORBIDDEN,
    NOT_FOUND,
    JobStateOut,
    ObjectRefOut,
    TeamObjectField,
    link,
)
from monitoring.evaluations.api.evaluations import queued_status
from monitoring.fusion import selectors, services
from monitoring.fusion.models import DEFAULT_DEPTH, DEFAULT_FOLDS, DEFAULT_MEASURE, DEFAULT_STEP, DEFAULTS
from monitoring.models import QrelsSource, Run

TAGS = ["evaluation: fusion"]


class FusionIn(serializers.Serializer):
    runs = serializers.ListField(
        child=TeamObjectField(Run, "run", unarchived=True),
        help_text="Two or more run ids (not archived), in the order `weights` follows.",
    )
    method = serializers.CharField(
        help_text=f"ranx's name: {', '.join(METHODS)}; also {', '.join(sorted(METHOD_ALIASES))} (any case)."
    )
    norm = serializers.CharField(
        default=DEFAULTS.norm, allow_null=True,
        help_text=f"{', '.join(NORMS)}, or none / null (default min-max, as ranx).",
    )  # fmt: skip
    weights = serializers.ListField(
        child=serializers.FloatField(), required=False, allow_null=True, default=None,
        help_text="wsum / wmnz: one weight per run (default 1 each).",
    )  # fmt: skip
    k = serializers.FloatField(default=DEFAULTS.k, min_value=0, help_text="rrf's k.")
    gamma = serializers.FloatField(
        default=DEFAULTS.gamma, help_text="gmnz's exponent of the number of runs that retrieved a document."
    )
    sigma = serializers.FloatField(
        default=DEFAULTS.sigma, min_value=0, max_value=1, help_text="logn_isr's sigma (ranx's default 0.01)."
    )
    phi = serializers.FloatField(default=DEFAULTS.phi, help_text="rbc's persistence, in (0, 1) (ranx's 0.8).")
    optimize_on = TeamObjectField(
        QrelsSource, "qrels source", unarchived=True, required=False, allow_null=True, default=None,
        help_text="A qrels source to choose wsum/wmnz weights (or rrf's k) on, by grid search with k-fold "
        "cross-validation over queries.",
    )  # fmt: skip
    measure = serializers.CharField(default=DEFAULT_MEASURE, help_text="The measure the search maximises.")
    folds = serializers.IntegerField(default=DEFAULT_FOLDS, min_value=2, max_value=50)
    step = serializers.FloatField(default=DEFAULT_STEP, help_text="Weight grid step; must divide 1.")
    seed = serializers.IntegerField(default=0, min_value=-(2**31), max_value=2**31 - 1)
    name = serializers.CharField(
        default="", allow_blank=True, max_length=200, help_text="Default fused-<method>."
    )
    depth = serializers.IntegerField(default=DEFAULT_DEPTH, min_value=1, max_value=100_000)

    def validate_runs(self, runs: list[Run]) -> list[Run]:
        distinct = list({run.pk: run for run in runs}.values())
        if len(distinct) < 2:
            raise serializers.ValidationError("Choose at least two different runs to fuse.")
        return distinct

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        norm = data["norm"]
        data["norm"] = None if norm is None or str(norm).strip().lower() == "none" else norm
        errors: dict[str, list[str]] = {}
        try:
            services.fusion_params(
                method=data["method"],
                norm=data["norm"],
                weights=data["weights"],
                k=data["k"],
                gamma=data["gamma"],
                sigma=data["sigma"],
                phi=data["phi"],
                runs=len(data["runs"]),
            )
        except InputError as error:
            field = getattr(error, "option", None) or ("weights" if data["weights"] else "method")
            errors[field] = [str(error)]
        if data["optimize_on"] is not None and not errors:
            for field, check in (("measure", services.check_measure), ("step", services.check_step)):
                try:
                    check(data[field])
                except InputError as error:
                    errors[field] = [str(error)]
        if errors:
            raise serializers.ValidationError(errors)
        return data


class FusionOut(JobStateOut):
    id = serializers.IntegerField()
    url = serializers.SerializerMethodField()
    name = serializers.CharField(help_text="The fused run's name.")
    inputs = ObjectRefOut(many=True, help_text="The input runs, in order.")
    method = serializers.CharField(help_text="ranx's name.")
    norm = serializers.CharField(allow_null=True, help_text="ranx's normalisation; null: none.")
    weights = serializers.ListField(
        child=serializers.FloatField(),
        allow_null=True,
        help_text="Given, or chosen by the optimisation once done.",
    )
    k = serializers.FloatField(help_text="rrf's k (given, or chosen).")
    gamma = serializers.FloatField(help_text="gmnz's gamma.")
    sigma = serializers.FloatField(help_text="logn_isr's sigma.")
    phi = serializers.FloatField(help_text="rbc's phi.")
    depth = serializers.IntegerField()
    optimize_on = ObjectRefOut(source="qrels", allow_null=True)
    measure = serializers.CharField(allow_blank=True)
    folds = serializers.IntegerField()
    step = serializers.FloatField()
    seed = serializers.IntegerField()
    optimization = serializers.JSONField(
        allow_null=True,
        help_text="Once done, when optimised: measure, trials, score and chosen on all queries, mean_test_score "
        "(the mean held-out score) and each fold's train and held-out score.",
    )
    result = ObjectRefOut(allow_null=True, help_text="The fused run, once done.")
    result_url = serializers.SerializerMethodField()
    num_queries = serializers.IntegerField(allow_null=True)
    num_rows = serializers.IntegerField(allow_null=True)

    def get_url(self, fusion: Any) -> str:
        return link(self, "fusion", fusion.team.slug, fusion.pk)

    def get_result_url(self, fusion: Any) -> str | None:
        return link(self, "run", fusion.team.slug, fusion.result_id) if fusion.result_id else None

    def to_representation(self, instance: Any) -> dict[str, Any]:
        data = super().to_representation(instance)
        data["norm"] = instance.norm or None
        return data


@extend_schema(
    methods=["GET"],
    parameters=PAGE_PARAMETERS,
    responses={200: page_of(FusionOut), 404: NOT_FOUND},
    operation_id="teams_fusions_list",
    summary="The team's fusions, newest first",
    tags=TAGS,
)
@extend_schema(
    methods=["POST"],
    request=FusionIn,
    responses={202: FusionOut, 400: FIELD_ERRORS, 403: FORBIDDEN, 404: NOT_FOUND, 503: FusionOut},
    summary="Fuse two or more runs into a new run of the team (editors; queued on the worker)",
    description="Answers 202 with the fusion and its job state; poll `url` until `status` is `done`, then "
    "`result` is the fused run. The same fusion as `manage.py fuse_runs` with the same options writes. "
    "503 when the task queue is unreachable (the fusion is then `failed`, saying so).",
    tags=TAGS,
)
@api_view(["GET", "POST"])
def fusion_list(request: Request, team: str) -> Response:
    membership = get_team_for_member(request.user, team, write=request.method == "POST")
    if request.method == "GET":
        return paginate(request, selectors.team_fusions(team=membership.team), FusionOut)
    data = FusionIn(data=request.data, context={"team": membership.team})
    data.is_valid(raise_exception=True)
    options = dict(data.validated_data)
    try:
        created = services.fusion_create(
            team=membership.team, qrels=options.pop("optimize_on"), created_by=request.user, **options
        )
    except InputError as error:
        raise serializers.ValidationError({"non_field_errors": [str(error)]}) from None
    fusion = selectors.get_fusion(team=membership.team, pk=created.pk)
    return Response(FusionOut(fusion, context={"request": request}).data, status=queued_status(fusion))


@extend_schema(
    responses={200: FusionOut, 404: NOT_FOUND},
    summary="A fusion: its job state, parameters and, once done, the fused run and the optimisation",
    tags=TAGS,
)
@api_view(["GET"])
def fusion_detail(request: Request, team: str, pk: int) -> Response:
    membership = get_team_for_member(request.user, team)
    fusion = selectors.get_fusion(team=membership.team, pk=pk)
    return Response(FusionOut(fusion, context={"request": request}).data)
