"""Forms of the evaluation pages: uploads, and starting evaluations and comparisons.

Every choice of a run, a qrels source or a build is limited to the team's own (the form takes the team), and
of runs and qrels sources to those not archived (`UnarchivedChoice`); measure names are checked against the registry the jobs use (`evaluations.check_measures`).
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.db.models import QuerySet
from django.forms.models import ModelChoiceIterator

from annotations.models import QrelsBuild
from evalcore.comparison import DEFAULT_MEASURES
from evalplatform.errors import InputError
from evalplatform.models import Team
from monitoring.editing.services import archived_refusal
from monitoring.evaluations import selectors
from monitoring.evaluations.models import OVERLAP
from monitoring.evaluations.services import check_measures
from monitoring.models import PARAMS, Comparison, QrelsSource, Run

#: The measures offered as checkboxes; any other goes in the free text field.
COMMON_MEASURES: tuple[str, ...] = (
    "map",
    "ndcg_cut_10",
    "ndcg",
    "P_5",
    "P_10",
    "recall_100",
    "recall_1000",
    "recip_rank",
    "Rprec",
    "bpref",
    "success_10",
)
FILE_HELP = (
    "A TREC file (whitespace-separated columns), TSV or JSONL; checked on its first lines before it is kept."
)


def _measure_choices() -> list[tuple[str, str]]:
    return [(key, selectors.measure_column(key).title) for key in COMMON_MEASURES]


class _Unarchived(ModelChoiceIterator):
    def __init__(self, field: forms.ModelChoiceField) -> None:
        super().__init__(field)
        self.queryset = self.queryset.filter(archived=False)


class UnarchivedChoice:
    """A choice of the team's runs or qrels sources for new work: it lists those not archived, and refuses
    one archived chosen anyway (a page opened before it was archived, an old link's `?run=`), saying so."""

    iterator: type[ModelChoiceIterator] = _Unarchived
    noun = "run"

    def clean(self, value: Any) -> Any:
        chosen = super().clean(value)  # type: ignore[misc]
        for item in chosen if isinstance(chosen, QuerySet) else [chosen]:
            if item is not None and item.archived:
                raise ValidationError(archived_refusal(item, self.noun))
        return chosen


class RunChoiceField(UnarchivedChoice, forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} (#{obj.pk})"


class RunsChoiceField(UnarchivedChoice, forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} (#{obj.pk})"


class QrelsChoiceField(UnarchivedChoice, forms.ModelChoiceField):
    noun = "qrels source"

    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} (#{obj.pk}, {obj.get_kind_display().lower()})"


class BuildChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.project.name} v{obj.version} ({obj.pairs_kept} judged pairs, {obj.aggregation})"


def _qrels_field(team: Team, **options: Any) -> QrelsChoiceField:
    """The team's qrels sources, the newest not archived chosen unless the form is told otherwise."""
    sources = selectors.team_qrels_sources(team=team)
    options.setdefault("initial", sources.filter(archived=False).first())
    return QrelsChoiceField(queryset=sources, label="Qrels", **options)


class MeasuresMixin(forms.Form):
    """Measures from the checkboxes plus a free text field, checked together against the registry."""

    measures = forms.MultipleChoiceField(
        choices=_measure_choices, widget=forms.CheckboxSelectMultiple, required=False, label="Measures"
    )
    more_measures = forms.CharField(
        required=False,
        label="More measures",
        help_text="Separated by spaces or commas: trec_eval names (P_20, ndcg_cut_5, map_cut_100) or "
        "ir-measures names (nDCG@5, RR, R@1000, RBP(p=0.9, rel=2)).",
    )
    rel_level = forms.IntegerField(
        initial=PARAMS.rel_level, min_value=-100, max_value=100, label="Relevance level (-l)",
        help_text="Binary measures count a document relevant when its grade is at least this.",
    )  # fmt: skip
    complete = forms.BooleanField(
        required=False,
        initial=PARAMS.complete,
        label="Count missing queries as zero (-c)",
        help_text="Average over every qrels query, a query the run lacks scoring 0.",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # Names are separated by commas or spaces, except inside parentheses: RBP(p=0.9, rel=2).
        extra = re.findall(r"(?:[^\s,()]|\([^()]*\))+", cleaned.get("more_measures") or "")
        names = list(dict.fromkeys([*cleaned.get("measures", []), *extra]))
        try:
            cleaned["measure_names"] = check_measures(names)
        except InputError as error:
            self.add_error("more_measures" if extra else "measures", str(error))
        return cleaned


class RunUploadForm(forms.Form):
    file = forms.FileField(label="Run file", help_text=FILE_HELP)
    name = forms.CharField(
        max_length=200, required=False, help_text="Defaults to the run's tag (6th column) or the file name."
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    tags = forms.CharField(
        max_length=500, required=False, help_text="Comma-separated labels: model, index, date…"
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["evaluate_on"] = _qrels_field(
            team, required=False, empty_label="Do not evaluate yet",
            help_text=f"Evaluate at once with the default measures ({', '.join(DEFAULT_MEASURES)}).",
        )  # fmt: skip
        self.fields["evaluate_on"].label = "Evaluate on"

    def clean_tags(self) -> list[str]:
        return [tag.strip() for tag in self.cleaned_data["tags"].split(",") if tag.strip()]


class QrelsUploadForm(forms.Form):
    file = forms.FileField(label="Qrels file", help_text=FILE_HELP + " TREC qrels: qid 0 doc_id grade.")
    name = forms.CharField(max_length=200, required=False, help_text="Defaults to the file name.")
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class QrelsBuildForm(forms.Form):
    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["build"] = BuildChoiceField(
            queryset=selectors.linked_qrels_builds(team=team), label="Qrels build", empty_label=None
        )

    @property
    def chosen_build(self) -> QrelsBuild:
        return self.cleaned_data["build"]  # type: ignore[no-any-return]


class EvaluationForm(MeasuresMixin):
    field_order = ["run", "qrels", "measures", "more_measures", "rel_level", "complete"]

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["run"] = RunChoiceField(queryset=selectors.team_runs(team=team), label="Run")
        self.fields["qrels"] = _qrels_field(team)
        self.fields["measures"].initial = list(DEFAULT_MEASURES)
        self.order_fields(self.field_order)

    @property
    def run(self) -> Run:
        return self.cleaned_data["run"]  # type: ignore[no-any-return]

    @property
    def qrels(self) -> QrelsSource:
        return self.cleaned_data["qrels"]  # type: ignore[no-any-return]


class ComparisonForm(MeasuresMixin):
    field_order = ["qrels", "runs", "measures", "more_measures", "test", "correction", "alpha", "rel_level",
                   "complete", "overlap_k", "rbo_p"]  # fmt: skip

    test = forms.ChoiceField(choices=Comparison.Test.choices, initial=PARAMS.test, label="Test")
    correction = forms.ChoiceField(
        choices=Comparison.Correction.choices, initial=PARAMS.correction, label="Correction",
        help_text="Applied over every pair of runs and every measure together.",
    )  # fmt: skip
    alpha = forms.FloatField(
        initial=PARAMS.alpha, label="α", help_text="Significance level, between 0 and 1."
    )

    def __init__(self, *args: Any, team: Team, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["qrels"] = _qrels_field(team)
        self.fields["runs"] = RunsChoiceField(
            queryset=selectors.team_runs(team=team), widget=forms.CheckboxSelectMultiple, label="Runs",
            help_text="Two or more; with more, every pair is tested.",
        )  # fmt: skip
        self.fields["measures"].initial = list(PARAMS.measures)
        self.order_fields(self.field_order)

    overlap_k = forms.IntegerField(
        initial=OVERLAP.k, min_value=1, max_value=1000, required=False, label="Overlap depth k",
        help_text="How deep each run's list is compared with the others' (Jaccard@k, RBO, Kendall's tau).",
    )  # fmt: skip
    rbo_p = forms.FloatField(
        initial=OVERLAP.p, required=False, label="RBO persistence p",
        help_text="Rank-biased overlap's weight of depth, strictly between 0 and 1 (0.9: the top 10 weigh 86%).",
    )  # fmt: skip

    def clean_overlap_k(self) -> int:
        k = self.cleaned_data["overlap_k"]
        return OVERLAP.k if k is None else int(k)

    def clean_rbo_p(self) -> float:
        p = self.cleaned_data["rbo_p"]
        p = OVERLAP.p if p is None else float(p)
        if not 0 < p < 1:
            raise ValidationError("p must lie strictly between 0 and 1.")
        return p

    def clean_runs(self) -> list[Run]:
        runs = list(self.cleaned_data["runs"])
        if len(runs) < 2:
            raise ValidationError("Choose at least two runs to compare.")
        return runs

    def clean_alpha(self) -> float:
        alpha = float(self.cleaned_data["alpha"])
        if not 0 < alpha < 1:
            raise ValidationError("α must lie strictly between 0 and 1.")
        return alpha
