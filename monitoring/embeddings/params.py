"""A stream's monitor parameters (`evalcore.embeddings.MonitorParams` with the stream's overrides), and the
error every refused input of the monitors raises, naming the field at fault."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evalcore.embeddings import MonitorParams
from evalcore.errors import EvalCoreError
from evalplatform.errors import InputError


class MonitorInputError(InputError):
    """A request refused; `field` names the input at fault, so the API's 400 can name it."""

    def __init__(self, message: str, *, field: str = "non_field_errors") -> None:
        super().__init__(message)
        self.field = field


# --- parameters -----------------------------------------------------------------------------------------


def monitor_params(overrides: Mapping[str, Any] | None) -> MonitorParams:
    """`MonitorParams` with a stream's overrides; an unknown name or a bad value is refused on `params`."""
    overrides = dict(overrides or {})
    known = MonitorParams.__dataclass_fields__
    if unknown := sorted(set(overrides) - set(known)):
        raise MonitorInputError(
            f"Unknown monitor parameter(s) {', '.join(unknown)}; known: {', '.join(known)}.", field="params"
        )
    try:
        return MonitorParams(**overrides)
    except (EvalCoreError, TypeError, ValueError) as error:
        raise MonitorInputError(str(error), field="params") from None
