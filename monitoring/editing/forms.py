"""The edit form of a run, a qrels source, an evaluation, a comparison, a recommendation set or a fraud score
set."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from evalplatform.errors import InputError
from monitoring.editing.services import clean_tags


class ItemEditForm(forms.Form):
    name = forms.CharField(max_length=200, required=True)
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)
    tags = forms.CharField(
        required=False, max_length=2000, help_text="Comma-separated: model, index, date...",
    )  # fmt: skip

    def __init__(self, *args: Any, name_required: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].required = name_required
        if not name_required:
            self.fields["name"].help_text = "Blank: named by what it is made of."

    def clean_tags(self) -> list[str]:
        try:
            return clean_tags(self.cleaned_data["tags"].split(","))
        except InputError as exc:
            raise ValidationError(str(exc)) from None
