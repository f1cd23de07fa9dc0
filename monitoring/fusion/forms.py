"""The form that starts a fusion: runs, method and normalisation by ranx's names, and weights given or
optimised on a qrels source. Every check is `monitoring.fusion.services`' own, its message beside the field."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from evalcore.fusion import METHOD_ALIASES, METHODS, NORMS, WEIGHTED_METHODS
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.evaluations import selectors
from monitoring.evaluations.forms import QrelsChoiceField, RunsChoiceField
from monitoring.fusion import services
from monitoring.fusion.models import DEFAULT_DEPTH, DEFAULT_FOLDS, DEFAULT_MEASURE, DEFAULT_STEP, DEFAULTS
from monitoring.models import Run

NONE = "none"


def _method_choices() -> list[tuple[str, str]]:
    aliases: dict[str, list[str]] = {}
    for alias, name in METHOD_ALIASES.items():
        aliases.setdefault(name, []).append(alias)
    return [(name, f"{name} ({', '.join(aliases[name])})" if name in aliases else name) for name in METHODS]


class FusionForm(forms.Form):
    field_order = ["runs", "method", "norm", "weights", "k", "gamma", "sigma", "phi", "qrels", "measure", "folds",
                   "step", "seed", "name", "depth"]  # fmt: skip

    method = forms.ChoiceField(
        choices=_method_choices, initial="rrf", label="Method",
        help_text="ranx's names; the CombSUM-style names in brackets are accepted by the API too.",
    )  # fmt: skip
    norm = forms.ChoiceField(
        choices=[(norm, norm) for norm in NORMS] + [(NONE, NONE)], initial=DEFAULTS.norm, label="Normalisation",
        help_text="Applied to each run per query first (ranx's default: min-max); rank methods ignore it.",
    )  # fmt: skip
    weights = forms.CharField(
        required=False, label="Weights",
        help_text=f"{' and '.join(WEIGHTED_METHODS)} only: one number per run, in the order listed above, "
        "separated by commas (default 1 each).",
    )  # fmt: skip
    k = forms.FloatField(initial=DEFAULTS.k, min_value=0, label="k (rrf)", help_text="1 / (k + rank).")
    gamma = forms.FloatField(
        initial=DEFAULTS.gamma, label="gamma (gmnz)",
        help_text="The sum of the scores times the number of runs that retrieved the document to this power.",
    )  # fmt: skip
    sigma = forms.FloatField(
        initial=DEFAULTS.sigma, min_value=0, max_value=1, label="sigma (logn_isr)",
        help_text="Added to the logarithm of the number of runs that retrieved the document (ranx: 0.01).",
    )  # fmt: skip
    phi = forms.FloatField(
        initial=DEFAULTS.phi, label="phi (rbc)",
        help_text="Rank-biased centroid's persistence, between 0 and 1 (ranx: 0.8).",
    )  # fmt: skip
    measure = forms.CharField(
        initial=DEFAULT_MEASURE, required=False, label="Measure to optimise",
        help_text="One arithmetic-mean measure (map, ndcg_cut_10, P_10, ...).",
    )  # fmt: skip
    folds = forms.IntegerField(initial=DEFAULT_FOLDS, min_value=2, max_value=50, label="Folds")
    step = forms.FloatField(initial=DEFAULT_STEP, label="Weight grid step", help_text="Must divide 1.")
    seed = forms.IntegerField(initial=0, label="Seed of the folds")
    name = forms.CharField(max_length=200, required=False, label="Name of the fused run",
                           help_text="Default: fused-<method>.")  # fmt: skip
    depth = forms.IntegerField(
        initial=DEFAULT_DEPTH,
        min_value=1,
        max_value=100_000,
        label="Depth",
        help_text="Documents kept per query.",
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.fields["runs"] = RunsChoiceField(
            queryset=selectors.team_runs(team=team).order_by("pk"), widget=forms.CheckboxSelectMultiple,
            label="Runs", help_text="Two or more, oldest first: the weights follow this order.",
        )  # fmt: skip
        self.fields["qrels"] = QrelsChoiceField(
            queryset=selectors.team_qrels_sources(team=team), required=False, label="Optimise on",
            empty_label="Do not optimise: use the weights given",
            help_text="wsum and wmnz (the weights) or rrf (k): grid search with k-fold cross-validation over "
            "queries, reporting the held-out score.",
        )  # fmt: skip
        self.order_fields(self.field_order)

    def clean_runs(self) -> list[Run]:
        runs = list(self.cleaned_data["runs"])
        if len(runs) < 2:
            raise ValidationError("Choose at least two runs to fuse.")
        return runs

    def clean_norm(self) -> str | None:
        norm = self.cleaned_data["norm"]
        return None if norm == NONE else str(norm)

    def clean_weights(self) -> list[float] | None:
        text = self.cleaned_data["weights"].strip()
        if not text:
            return None
        try:
            return [float(part) for part in re.split(r"[\s,]+", text) if part]
        except ValueError:
            raise ValidationError("Give numbers separated by commas, such as 0.3, 0.7.") from None

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        runs, method, weights = cleaned["runs"], cleaned["method"], cleaned["weights"]
        try:
            services.fusion_params(
                method=method, norm=cleaned["norm"], weights=weights, k=cleaned["k"], gamma=cleaned["gamma"],
                sigma=cleaned["sigma"], phi=cleaned["phi"], runs=len(runs),
            )  # fmt: skip
        except InputError as error:
            self.add_error(getattr(error, "option", None) or ("weights" if weights else "norm"), str(error))
            return cleaned
        if cleaned.get("qrels") is not None:
            if method not in services.OPTIMIZABLE:
                self.add_error(
                    "qrels", f"Only {', '.join(services.OPTIMIZABLE)} can be optimised, not {method}."
                )
            try:
                services.check_measure(cleaned["measure"] or DEFAULT_MEASURE)
            except InputError as error:
                self.add_error("measure", str(error))
            try:
                services.check_step(cleaned["step"])
            except InputError as error:
                self.add_error("step", str(error))
        return cleaned
