"""The stream forms: a new stream and its edit (their parameter fields generated from `MonitorParams` and
`PARAM_BOUNDS`, so each shows its default and its bound and is checked by the same rule the monitor
applies), a snapshot upload (.npy or a JSON list of vectors)."""

from __future__ import annotations

import json
import typing
from dataclasses import MISSING, fields
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from evalcore.embeddings import PARAM_BOUNDS, EmbeddingInputError, MonitorParams
from monitoring.embeddings.params import MonitorInputError, monitor_params
from monitoring.embeddings.streams import MAX_EVERY_MINUTES, SLUG, check_schedule, vectors_array

#: The largest JSON file of vectors read (10,000 vectors of 768 numbers written with full precision).
MAX_JSON_BYTES = 200 * 1024 * 1024


def _param_field(name: str, kind: Any, default: Any) -> forms.Field:
    """A form field for one `MonitorParams` field: its type from the annotation, its bound in the help."""
    bound = PARAM_BOUNDS.get(name)
    shown = "empty" if default is None else default
    help_text = f"Default {shown}" + (f"; {bound.text()}." if bound else ".")
    label = name.replace("_", " ").capitalize()
    if typing.get_origin(kind) is typing.Literal:
        choices = [(choice, choice) for choice in typing.get_args(kind)]
        return forms.ChoiceField(choices=choices, initial=default, label=label, help_text=help_text)
    if kind is bool:
        return forms.BooleanField(required=False, initial=default, label=label, help_text=help_text)
    if kind is int:
        minimum = bound.minimum if bound else None
        maximum = bound.maximum if bound else None
        return forms.IntegerField(
            initial=default, min_value=minimum, max_value=maximum, label=label, help_text=help_text
        )
    return forms.FloatField(required=default is not None, initial=default, label=label, help_text=help_text)


def _param_fields() -> dict[str, forms.Field]:
    hints = typing.get_type_hints(MonitorParams)
    made = {}
    for spec in fields(MonitorParams):
        kind = hints[spec.name]
        if typing.get_origin(kind) in (typing.Union, type(int | None)):  # `float | None`
            kind = next(arg for arg in typing.get_args(kind) if arg is not type(None))
        default = None if spec.default is MISSING else spec.default
        made[spec.name] = _param_field(spec.name, kind, default)
    return made


#: The monitor's parameters, in `MonitorParams`' order (the form's fields of the same names).
PARAM_NAMES: tuple[str, ...] = tuple(spec.name for spec in fields(MonitorParams))


class StreamForm(forms.Form):
    name = forms.CharField(max_length=200)
    slug = forms.SlugField(
        max_length=64, help_text="The stream's name in its addresses (letters, digits, - and _)."
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    dimension = forms.IntegerField(min_value=1, help_text="Every snapshot must have this many columns.")
    every_minutes = forms.IntegerField(
        required=False, min_value=1, max_value=MAX_EVERY_MINUTES,
        help_text="Monitor new snapshots every N minutes; or give a cron schedule; or neither (monitor now only).",
    )  # fmt: skip
    crontab = forms.CharField(
        required=False, max_length=100, help_text='Or a cron schedule, "minute hour day month weekday".'
    )

    def __init__(self, *args: Any, team: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.team = team
        self.fields.update(_param_fields())

    def clean_slug(self) -> Any:
        slug = self.cleaned_data["slug"]
        if slug == "new" or not SLUG.fullmatch(slug):
            raise ValidationError("“new” is the address of the new-stream page: choose another.")
        if self.team.embedding_streams.filter(slug=slug).exists():
            raise ValidationError(f"The team already has a stream {slug}.")
        return slug

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        try:
            check_schedule(data.get("every_minutes"), data.get("crontab", ""))
        except MonitorInputError as error:
            self.add_error(error.field if error.field in self.fields else None, str(error))
        for name in PARAM_NAMES:
            if name in data and name in PARAM_BOUNDS:
                try:
                    PARAM_BOUNDS[name].check(data[name], name=name)
                except EmbeddingInputError as error:
                    self.add_error(name, str(error))
        return data

    def params(self) -> dict[str, Any]:
        """The parameters that differ from the defaults: what the stream stores as its overrides."""
        defaults = MonitorParams().to_dict()
        return {
            name: self.cleaned_data[name]
            for name in PARAM_NAMES
            if name in self.cleaned_data and self.cleaned_data[name] != defaults[name]
        }

    def param_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in PARAM_NAMES]

    def stream_fields(self) -> list[forms.BoundField]:
        names = ("name", "slug", "description", "dimension", "every_minutes", "crontab")
        return [self[name] for name in names if name in self.fields]


class StreamEditForm(StreamForm):
    """The new-stream form, less the slug (the stream's addresses) and the dimension (its snapshots' width),
    filled with the stream's name, schedule and parameters: the same fields and the same checks."""

    FIXED = ("slug", "dimension")

    def __init__(self, *args: Any, stream: Any, **kwargs: Any) -> None:
        initial = {
            "name": stream.name, "description": stream.description, "every_minutes": stream.every_minutes,
            "crontab": stream.crontab, **monitor_params(stream.params).to_dict(),
        }  # fmt: skip
        super().__init__(*args, team=stream.team, initial=initial, **kwargs)
        for name in self.FIXED:
            del self.fields[name]


class SnapshotForm(forms.Form):
    file = forms.FileField(
        help_text="A .npy file (rows x the stream's dimension, float32 or float64), or a .json file holding "
        "a list of vectors (at most 10,000)."
    )
    reference = forms.BooleanField(
        required=False, help_text="Make it the stream's reference (monitored at once; what good looks like)."
    )
    label = forms.CharField(
        required=False, max_length=200, help_text="Shown on the dashboard (the file's name)."
    )
    observed_at = forms.DateTimeField(
        required=False, help_text="When the embeddings were taken, YYYY-MM-DD HH:MM (now)."
    )

    def __init__(self, *args: Any, dimension: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.dimension = dimension

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        if upload.name.lower().endswith(".json"):
            if upload.size > MAX_JSON_BYTES:
                raise ValidationError(
                    f"{upload.name}: {upload.size:,} bytes; a JSON file holds at most {MAX_JSON_BYTES:,} "
                    "(bigger snapshots go as .npy files)."
                )
            try:
                vectors = json.load(upload)
            except (ValueError, UnicodeDecodeError) as error:
                raise ValidationError(f"{upload.name}: not JSON ({error}).") from None
            try:
                vectors_array(vectors, dimension=self.dimension)
            except MonitorInputError as error:
                raise ValidationError(f"{upload.name}: {error}") from None
            self.vectors = vectors
        else:
            self.vectors = None
        return upload
