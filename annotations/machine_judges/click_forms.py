"""The form of a search log's upload: the log, its click model and the mapping of its grades."""

from __future__ import annotations

from typing import Any

from django import forms

from annotations.machine_judges.clicks import (
    CLICK_GRADES,
    DEFAULT_MIN_IMPRESSIONS,
    ClickImportParams,
    default_grade_map,
    grade_map_error,
)
from annotations.models import Project
from evalcore.clicks import DEFAULT_THRESHOLDS, FORMATS, MODELS

MODEL_LABELS = {
    "coec": "COEC: clicks over expected clicks",
    "pbm": "PBM: position-based model (EM)",
    "dbn": "DBN: dynamic Bayesian network (EM)",
}
FORMAT_LABELS = {"csv": "CSV", "jsonl": "JSON Lines", "ubi": "User Behavior Insights events"}


def thresholds_help() -> str:
    defaults = "; ".join(
        f"{model} {','.join(f'{t:g}' for t in DEFAULT_THRESHOLDS[model])}" for model in MODELS
    )
    return f"The relevance at which grades 1, 2, 3 and 4 start. Empty: the model's defaults ({defaults})."


def _parse(text: str, kind: type, what: str) -> tuple[Any, ...] | None:
    if not text.strip():
        return None
    try:
        return tuple(kind(part) for part in text.replace(" ", "").split(","))
    except ValueError:
        raise forms.ValidationError(f"Give {what} separated by commas.") from None


class ClickLogForm(forms.Form):
    file = forms.FileField(
        help_text="One row per shown result: CSV session,query,doc,position,clicked[,dwell], JSON Lines with "
        "those keys, or UBI events (impression and click actions)."
    )
    log_format = forms.ChoiceField(
        label="Format", choices=[(f, FORMAT_LABELS[f]) for f in FORMATS], initial="csv"
    )
    model = forms.ChoiceField(
        label="Click model", choices=[(m, MODEL_LABELS[m]) for m in MODELS], initial="dbn"
    )
    name = forms.CharField(
        max_length=100, required=False, label="Judge name", help_text="Empty: clicks-<model>."
    )
    version = forms.CharField(
        max_length=64, initial="1", help_text="Another log or other settings: a new version."
    )
    min_impressions = forms.IntegerField(
        min_value=1, max_value=1_000_000, initial=DEFAULT_MIN_IMPRESSIONS,
        help_text="A pair shown fewer times gets no judgment.",
    )  # fmt: skip
    thresholds = forms.CharField(max_length=200, required=False, label="Grade boundaries")
    grade_map = forms.CharField(max_length=100, label="Grade mapping")
    min_dwell = forms.FloatField(
        min_value=0, max_value=86_400, required=False, label="Minimum dwell (seconds)",
        help_text="A click with a shorter known dwell time counts as no click.",
    )  # fmt: skip
    max_iterations = forms.IntegerField(
        min_value=1, max_value=10_000, required=False, help_text="EM's cap. Empty: pbm 500, dbn 100."
    )

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project
        self.fields["thresholds"].help_text = thresholds_help()
        self.fields["grade_map"].initial = ",".join(map(str, default_grade_map(project)))
        self.fields["grade_map"].help_text = (
            f"The project's grade for each click grade {', '.join(map(str, CLICK_GRADES))}; the default sends "
            "each onto the largest grade of the project's scale not above it."
        )

    def clean_thresholds(self) -> tuple[float, ...] | None:
        return _parse(self.cleaned_data["thresholds"], float, "four numbers")

    def clean_grade_map(self) -> tuple[int, ...] | None:
        grades = _parse(self.cleaned_data["grade_map"], int, "five whole grades")
        if grades is not None:
            wrong = grade_map_error(self.project, grades)
            if wrong:
                raise forms.ValidationError(wrong[0].upper() + wrong[1:] + ".")
        return grades

    def clean(self) -> dict[str, Any] | None:
        data = super().clean() or {}
        if self.errors:
            return data
        try:
            data["params"] = ClickImportParams(
                model=data["model"], log_format=data["log_format"], name=data["name"].strip(),
                version=data["version"].strip(), min_impressions=data["min_impressions"],
                thresholds=data["thresholds"], grade_map=data["grade_map"], min_dwell=data["min_dwell"],
                max_iterations=data["max_iterations"],
            )  # fmt: skip
        except ValueError as exc:
            field = "thresholds" if "threshold" in str(exc) else None
            self.add_error(field, str(exc)[0].upper() + str(exc)[1:] + ".")
        return data

    def params(self) -> ClickImportParams:
        return self.cleaned_data["params"]  # type: ignore[no-any-return]
