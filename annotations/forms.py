"""Forms of the lead pages: project settings, members and imports. (The quality page's forms, a qrels
build's parameters and a lead's override, are `annotations.quality.forms`.)"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from annotations.imports import DEFAULT_DEPTH, FORMATS, KINDS
from annotations.models import MAX_GRADE, Project, ProjectMembership
from evalplatform.models import Team
from evalplatform.people import PersonField
from evalplatform.teams import teams_for_user


def validate_scale(value: Any) -> list[dict[str, Any]]:
    """A scale is a list of {"grade": 0-9, "label": str, "definition"?: str} with distinct grades."""
    if not isinstance(value, list) or len(value) < 2:
        raise ValidationError("The scale needs at least two grades.")
    seen: set[int] = set()
    for level in value:
        if (
            not isinstance(level, dict)
            or not isinstance(level.get("label"), str)
            or not level["label"].strip()
        ):
            raise ValidationError('Each grade needs a "label".')
        grade = level.get("grade")
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= MAX_GRADE:
            raise ValidationError(f'Each "grade" must be a whole number from 0 to {MAX_GRADE}.')
        if grade in seen:
            raise ValidationError(f"Grade {grade} appears twice.")
        seen.add(grade)
    return sorted(value, key=lambda level: level["grade"])


def validate_examples(value: Any) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise ValidationError("Examples are a list of objects.")
    for example in value:
        if not isinstance(example, dict) or not all(
            isinstance(example.get(key), str) for key in ("query", "document", "reason")
        ):
            raise ValidationError('Each example needs "query", "document", "grade" and "reason".')
        if isinstance(example.get("grade"), bool) or not isinstance(example.get("grade"), int):
            raise ValidationError('Each example\'s "grade" must be a whole number.')
    return value


#: The columns of the row editors that `annotations/project_form.js` draws over the scale's and the
#: guideline examples' JSON (the JSON stays the one thing submitted and validated, so the form also works
#: without JavaScript). `type` number columns are sent as whole numbers.
SCALE_COLUMNS: list[dict[str, Any]] = [
    {"key": "grade", "label": "Grade", "type": "number", "min": 0, "max": MAX_GRADE},
    {"key": "label", "label": "Label", "type": "text"},
    {"key": "definition", "label": "Definition", "type": "textarea", "optional": True},
]
EXAMPLE_COLUMNS: list[dict[str, Any]] = [
    {"key": "query", "label": "Query", "type": "text"},
    {"key": "document", "label": "Document", "type": "textarea"},
    {"key": "grade", "label": "Grade", "type": "number", "min": 0, "max": MAX_GRADE},
    {"key": "reason", "label": "Why", "type": "textarea"},
]


def _rows_widget(columns: list[dict[str, Any]], *, add: str, remove: str) -> forms.Textarea:
    return forms.Textarea(
        attrs={
            "rows": 8,
            "class": "code",
            "data-row-columns": json.dumps(columns),
            "data-add-label": add,
            "data-remove-label": remove,
        }
    )


class ProjectForm(forms.ModelForm):
    class Meta:
        model = Project
        fields = [
            "name", "slug", "description", "guidelines", "scale", "guideline_examples",
            "overlap", "gold_overlap", "gold_share_min", "gold_share_max",
            "min_seconds_per_task", "too_fast_policy", "session_cap_minutes", "session_break_minutes",
            "reservation_minutes", "min_gold_accuracy", "min_gold_items", "team",
        ]  # fmt: skip
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "guidelines": forms.Textarea(attrs={"rows": 8}),
            "scale": _rows_widget(SCALE_COLUMNS, add="Add a grade", remove="Remove grade"),
            "guideline_examples": _rows_widget(
                EXAMPLE_COLUMNS, add="Add an example", remove="Remove example"
            ),
            "slug": forms.TextInput(attrs={"data-slug-from": "id_name"}),
        }
        help_texts = {
            "slug": "Letters, digits and hyphens; it appears in the project's URLs. Filled in from the name "
            "until you edit it.",
            "scale": "One row per grade: a whole number from 0 to 9, its label, and what it means.",
            "guideline_examples": "Worked examples shown with the guidelines: a query, a document, its grade "
            "and why.",
        }

    def __init__(self, *args: Any, user: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The quality thresholds keep their current values (or the defaults) when a form leaves them out.
        for name in ("min_gold_accuracy", "min_gold_items"):
            self.fields[name].required = False
        # A lead links the project to one of their own teams (the current one stays choosable).
        teams = teams_for_user(user) if user is not None else Team.objects.none()
        if self.instance.team_id:
            teams = teams | Team.objects.filter(pk=self.instance.team_id)
        self.fields["team"].queryset = teams.distinct().order_by("name")  # type: ignore[attr-defined]
        self.fields["team"].required = False

    def _kept(self, name: str) -> Any:
        value = self.cleaned_data.get(name)
        if value is None:
            return getattr(self.instance, name) if self.instance.pk else Project._meta.get_field(name).default  # type: ignore[union-attr]
        return value

    def clean_min_gold_accuracy(self) -> float:
        value = float(self._kept("min_gold_accuracy"))
        if not 0 <= value <= 1:
            raise ValidationError("The minimum accuracy is a share between 0 and 1 (0.7 is 70%).")
        return value

    def clean_min_gold_items(self) -> int:
        return int(self._kept("min_gold_items"))

    def clean_scale(self) -> list[dict[str, Any]]:
        scale = validate_scale(self.cleaned_data["scale"])
        removed = (
            set(self.instance.grades) - {level["grade"] for level in scale} if self.instance.pk else set()
        )
        if removed and self.instance.annotations.filter(grade__in=removed).exists():
            raise ValidationError("Grades already used by annotations cannot be removed from the scale.")
        return scale

    def clean_guideline_examples(self) -> list[dict[str, Any]]:
        return validate_examples(self.cleaned_data["guideline_examples"])

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        low, high = cleaned.get("gold_share_min"), cleaned.get("gold_share_max")
        if low is not None and high is not None and not 0 <= low <= high < 1:
            raise ValidationError("The gold share needs 0 ≤ minimum ≤ maximum < 1.")
        return cleaned


class MemberForm(forms.Form):
    username = PersonField(
        help_text="An account's username or email; an email with no account is invited to set a password."
    )
    role = forms.ChoiceField(choices=ProjectMembership.Role.choices, initial=ProjectMembership.Role.ANNOTATOR)


FORMAT_CHOICES = [("", "Detect from the file")] + [
    (fmt, label)
    for fmt, label in (
        ("trec", "TREC (topics file, run file or qrels)"),
        ("tsv", "TSV"),
        ("jsonl", "JSONL"),
    )
]


class ImportForm(forms.Form):
    kind = forms.ChoiceField(choices=list(KINDS.items()), label="What the file holds")
    format = forms.ChoiceField(choices=FORMAT_CHOICES, required=False)
    depth = forms.IntegerField(
        min_value=1, max_value=10_000, initial=DEFAULT_DEPTH, required=False,
        help_text="For run files: how many documents per topic go into the pool.",
    )  # fmt: skip
    file = forms.FileField()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        kind, fmt = cleaned.get("kind"), cleaned.get("format")
        if kind and fmt and fmt not in FORMATS[kind]:
            raise ValidationError(f"{KINDS[kind]} can be read as {', '.join(FORMATS[kind])}, not {fmt}.")
        return cleaned
