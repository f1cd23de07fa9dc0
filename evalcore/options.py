"""Options of an evaluation declared once, with their bounds, in a frozen dataclass.

A field declared with `option(...)` carries its bounds, whether it may be None and one sentence of help
in the field's metadata; `options_check(self)` (called by the dataclass's `__post_init__`) refuses a value
out of bounds with `OptionsError` naming the field, and stores each value as its declared type (an int
given for a float option becomes a float). `option_specs(cls)` reads the declarations back, so a form, an
API serializer and a command derive their fields, defaults and bounds from the dataclass instead of
typing them again (`evalcore.recsys.RecsysOptions`, `evalcore.fraud.FraudOptions`).

>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Cut:
...     k: int | None = option(None, kind=int, minimum=1, help="Cutoff.")
...     share: float = option(0.5, kind=float, minimum=0.0, minimum_open=True, maximum=1.0, help="Share.")
...     def __post_init__(self) -> None:
...         options_check(self)
>>> Cut(share=1).share
1.0
>>> Cut(k=0)
Traceback (most recent call last):
...
evalcore.options.OptionsError: k must be an integer from 1 to 2147483647, got 0
>>> Cut(share=0.0).share
Traceback (most recent call last):
...
evalcore.options.OptionsError: share must lie in (0, 1], got 0.0
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, TypeVar

from evalcore.errors import EvalCoreError

T = TypeVar("T")

#: The largest integer option: what a PostgreSQL integer column holds (a cutoff, an alert budget).
MAX_INT_OPTION = 2**31 - 1


class OptionsError(EvalCoreError, ValueError):
    """An option out of its bounds: `field` names it, `rule` says what it must be ("must lie in [0, 1]")
    and `value` is what was given; the message is "<field> <rule>, got <value>"."""

    def __init__(self, field: str, rule: str, value: object) -> None:
        self.field = field
        self.rule = rule
        self.value = value
        super().__init__(f"{field} {rule}, got {value!r}")


@dataclass(frozen=True)
class OptionSpec:
    """One option as declared: its name, type (bool, int or float), default, whether None is allowed,
    its bounds (each inclusive unless `*_open`) and its help."""

    name: str
    kind: type
    default: Any
    nullable: bool
    minimum: float | None = None
    maximum: float | None = None
    minimum_open: bool = False
    maximum_open: bool = False
    help: str = ""

    def rule(self) -> str:
        """What a value must be, in words ("must lie in (0, 1]", "must be an integer >= 1")."""
        if self.kind is bool:
            return "must be true or false"
        noun = "an integer" if self.kind is int else "a finite number"
        low, high = self.minimum, self.maximum
        if low is not None and high is not None and self.kind is float:
            left, right = "(" if self.minimum_open else "[", ")" if self.maximum_open else "]"
            return f"must lie in {left}{low:g}, {high:g}{right}"
        if low is not None and high is not None and not (self.minimum_open or self.maximum_open):
            return f"must be {noun} from {_number(low)} to {_number(high)}"
        parts = []
        if low is not None:
            parts.append(f"{'>' if self.minimum_open else '>='} {_number(low)}")
        if high is not None:
            parts.append(f"{'<' if self.maximum_open else '<='} {_number(high)}")
        return f"must be {noun}" + (f" {' and '.join(parts)}" if parts else "")

    def check(self, value: Any) -> Any:
        """The value as the declared type, or `OptionsError`."""
        if value is None:
            if self.nullable:
                return None
            raise OptionsError(self.name, self.rule(), value)
        if self.kind is bool:
            if not isinstance(value, bool):
                raise OptionsError(self.name, self.rule(), value)
            return value
        if isinstance(value, bool):
            raise OptionsError(self.name, self.rule(), value)
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise OptionsError(self.name, self.rule(), value) from None
        if not math.isfinite(number) or (self.kind is int and number != int(number)):
            raise OptionsError(self.name, self.rule(), value)
        low, high = self.minimum, self.maximum
        if low is not None and (number <= low if self.minimum_open else number < low):
            raise OptionsError(self.name, self.rule(), value)
        if high is not None and (number >= high if self.maximum_open else number > high):
            raise OptionsError(self.name, self.rule(), value)
        return int(number) if self.kind is int else number


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def option(
    default: Any,
    *,
    kind: type,
    minimum: float | None = None,
    maximum: float | None = None,
    minimum_open: bool = False,
    maximum_open: bool = False,
    nullable: bool | None = None,
    help: str = "",
) -> Any:
    """A dataclass field with its bounds; None is allowed when the default is None unless `nullable`
    says otherwise. An int option has at most `MAX_INT_OPTION` unless a maximum is given."""
    if kind is int and maximum is None:
        maximum = MAX_INT_OPTION
    bounds = {
        "kind": kind, "minimum": minimum, "maximum": maximum, "minimum_open": minimum_open,
        "maximum_open": maximum_open, "nullable": default is None if nullable is None else nullable, "help": help,
    }  # fmt: skip
    return dataclasses.field(default=default, metadata={"option": bounds})


def option_specs(cls: type) -> dict[str, OptionSpec]:
    """The declared options of a dataclass (instance or class), by name, in declaration order."""
    return {
        item.name: OptionSpec(name=item.name, default=item.default, **item.metadata["option"])
        for item in dataclasses.fields(cls)
        if "option" in item.metadata
    }


def options_check(options: Any) -> None:
    """Check every declared option of a frozen dataclass instance and store it as its declared type;
    the first one out of bounds raises `OptionsError`."""
    for name, spec in option_specs(type(options)).items():
        object.__setattr__(options, name, spec.check(getattr(options, name)))


def command_argument(
    parser: argparse.ArgumentParser, cls: type, name: str, *flags: str, **overrides: Any
) -> None:
    """The option as a command-line option (`dest` is its name): a flag for a bool, else a value of its
    type with its default; `options_of` checks the bounds."""
    spec = option_specs(cls)[name]
    default = "" if spec.default is None else f" (default {spec.default})"
    common: dict[str, Any] = {"dest": name, "help": spec.help + default, **overrides}
    if spec.kind is bool:
        parser.add_argument(*flags, action="store_true", **common)
    else:
        parser.add_argument(*flags, type=spec.kind, default=spec.default, **common)


def options_of(cls: type[T], values: dict[str, Any], *, flags: dict[str, str] | None = None) -> T:
    """The dataclass built from `values` (its option names: a form's cleaned data, a command's options);
    `OptionsError` as raised, its message naming the option by its flag when `flags` maps it."""
    try:
        return cls(**{name: values[name] for name in option_specs(cls) if name in values})
    except OptionsError as refused:
        flag = (flags or {}).get(refused.field)
        if flag is None:
            raise
        raise OptionsError(flag, refused.rule, refused.value) from None
