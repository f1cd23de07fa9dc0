"""Form, API and command fields derived from an options dataclass (`evalcore.options`), so that a field's
type, default, whether it may be blank, its bounds and its help are declared once, on the dataclass.

`form_field(Options, "k", label=...)` is a Django form field, `serializer_field(Options, "k")` a DRF field,
`command_argument(parser, Options, "k", "-k")` an argparse option; `options_of(Options, values)` builds
the dataclass (an `OptionsError` naming the option, by its flag for a command). The last two need no
framework and live in `evalcore.options`, so that the commands start without Django; they are named here
too. Each caller keeps only its words (a form's label); every field also checks its value with the
dataclass's own check, so an open bound (head_share > 0) is refused on its field.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from rest_framework import serializers

from evalcore.options import OptionsError, OptionSpec, command_argument, option_specs, options_of

__all__ = ["command_argument", "form_field", "options_of", "serializer_field"]


def _spec(cls: type, name: str) -> OptionSpec:
    return option_specs(cls)[name]


def _bounds(spec: OptionSpec) -> dict[str, Any]:
    """The closed bounds, as min_value and max_value (an open one is left to the dataclass)."""
    bounds: dict[str, Any] = {}
    if spec.minimum is not None and not spec.minimum_open:
        bounds["min_value"] = spec.kind(spec.minimum)
    if spec.maximum is not None and not spec.maximum_open:
        bounds["max_value"] = spec.kind(spec.maximum)
    return bounds


def _validator(spec: OptionSpec, error: type[Exception]) -> Any:
    def check(value: Any) -> None:
        try:
            spec.check(value)
        except OptionsError as refused:
            raise error(f"{spec.name} {refused.rule}.") from None

    return check


def form_field(cls: type, name: str, **overrides: Any) -> forms.Field:
    """The option as a form field: blank allowed where None is, the default as the initial value."""
    spec = _spec(cls, name)
    common: dict[str, Any] = {"help_text": spec.help, **overrides}
    if spec.kind is bool:
        return forms.BooleanField(required=False, initial=spec.default, **common)
    field_class = forms.IntegerField if spec.kind is int else forms.FloatField
    return field_class(
        required=not spec.nullable, initial=spec.default, validators=[_validator(spec, ValidationError)],
        **_bounds(spec), **common,
    )  # fmt: skip


def serializer_field(cls: type, name: str, **overrides: Any) -> serializers.Field:
    """The option as an API field: optional, with its default; null allowed where None is."""
    spec = _spec(cls, name)
    common: dict[str, Any] = {"default": spec.default, "help_text": spec.help, **overrides}
    if spec.kind is bool:
        return serializers.BooleanField(**common)
    field_class = serializers.IntegerField if spec.kind is int else serializers.FloatField
    return field_class(
        allow_null=spec.nullable, validators=[_validator(spec, serializers.ValidationError)], **_bounds(spec),
        **common,
    )  # fmt: skip
