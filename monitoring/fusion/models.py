"""A fusion of two or more of a team's runs: the job that fuses them and the run it stored.

The parameters are frozen on the row (ranx's method and normalisation names, the weights, RRF's k,
gmnz's gamma, logn_isr's sigma and rbc's phi, and
for an optimised fusion the qrels, measure, folds, seed and grid step); `inputs` keeps each input run's
id and name in the order the weights follow, so the provenance stays readable after an input is deleted.
Once done, `result` is the fused run (a `Run` of the team, evaluable like any upload) and `optimization`
the cross-validated search (`evalcore.fusion.optimization_json`).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from evalcore.fusion import METHOD_OPTION, FusionParams
from evalplatform.jobs import Job
from evalplatform.models import Team
from monitoring.files.models import QrelsSource, Run

#: ranx's defaults, as `fuse_runs` takes them.
DEFAULTS = FusionParams("sum")
DEFAULT_MEASURE = "map"
DEFAULT_FOLDS = 5
DEFAULT_STEP = 0.1
DEFAULT_DEPTH = 1000


class Fusion(Job):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="fusions")
    inputs = models.JSONField(help_text='The input runs in order: [{"id": 3, "name": "bm25"}, ...].')
    method = models.CharField(max_length=16, help_text="ranx's name of the method (rrf, mnz, wsum, ...).")
    norm = models.CharField(max_length=16, blank=True, help_text="ranx's normalisation; blank: none.")
    weights = models.JSONField(null=True, blank=True, help_text="wsum/wmnz: one weight per input run.")
    k = models.FloatField(default=DEFAULTS.k, help_text="rrf's k.")
    gamma = models.FloatField(default=DEFAULTS.gamma, help_text="gmnz's exponent of the number of runs.")
    sigma = models.FloatField(default=DEFAULTS.sigma, help_text="logn_isr's sigma, in [0, 1].")
    phi = models.FloatField(default=DEFAULTS.phi, help_text="rbc's persistence, in (0, 1).")
    depth = models.PositiveIntegerField(default=DEFAULT_DEPTH, help_text="Documents kept per query.")
    name = models.CharField(max_length=200, help_text="The fused run's name.")
    # Optimisation of the weights (or rrf's k) on a qrels source, by grid search with k-fold CV.
    qrels = models.ForeignKey(
        QrelsSource, on_delete=models.SET_NULL, null=True, blank=True, related_name="fusions",
        help_text="Optimise on this qrels source; blank: fuse with the weights given.",
    )  # fmt: skip
    measure = models.CharField(max_length=100, blank=True, default=DEFAULT_MEASURE)
    folds = models.PositiveSmallIntegerField(default=DEFAULT_FOLDS)
    seed = models.IntegerField(default=0)
    step = models.FloatField(default=DEFAULT_STEP)
    optimize = models.BooleanField(default=False)
    # What the job made.
    result = models.OneToOneField(
        Run, on_delete=models.SET_NULL, null=True, blank=True, related_name="fusion",
        help_text="The fused run, once done.",
    )  # fmt: skip
    optimization = models.JSONField(
        null=True, blank=True, help_text="The search: folds, held-out mean, chosen."
    )
    num_queries = models.PositiveIntegerField(null=True, blank=True)
    num_rows = models.PositiveBigIntegerField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    task_name = "monitoring.tasks.fusion_run"
    queue_down_hint = "Try again later, or run `python manage.py fuse_runs` and upload its file."

    class Meta:
        ordering = ["team", "-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(depth__gte=1), name="fusion_depth"),
            models.CheckConstraint(condition=Q(optimize=False) | Q(folds__gte=2), name="fusion_folds"),
            models.CheckConstraint(condition=Q(sigma__gte=0, sigma__lte=1), name="fusion_sigma"),
            models.CheckConstraint(condition=Q(phi__gt=0, phi__lt=1), name="fusion_phi"),
        ]
        indexes = [models.Index(fields=["team", "-created_at"], name="fusion_by_team")]

    def __str__(self) -> str:
        return f"{self.method} of {len(self.inputs)} runs ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("monitoring:fusion-detail", args=[self.team.slug, self.pk])

    def params(self) -> FusionParams:
        """The parameters as given (an optimised fusion's chosen ones are in `optimization`)."""
        weights = tuple(self.weights) if self.weights is not None else None
        return FusionParams(
            self.method, norm=self.norm or None, weights=weights, k=self.k, gamma=self.gamma,
            sigma=self.sigma, phi=self.phi,
        )  # fmt: skip

    @property
    def method_option(self) -> tuple[str, float] | None:
        """The method's own option and its value (`evalcore.fusion.METHOD_OPTION`), for its page; None for a
        method without one."""
        option = METHOD_OPTION.get(self.method)
        return None if option is None else (option, getattr(self, option))

    @property
    def tag(self) -> str:
        """The fused file's run tag: `fuse_runs`' default, so the two write the same file."""
        return f"fused-{self.method}"

    @property
    def input_ids(self) -> list[int]:
        return [int(item["id"]) for item in self.inputs]
