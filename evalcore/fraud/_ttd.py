"""Time to detection: how long after an entity's fraud begins the model first flags it.

An entity (an account, a card) is anomalous when it has at least one fraud example; its fraud begins
at the earliest timestamp among them. It is detected at the earliest flagged example of the entity
at or after that moment (any flagged example: an alert on the account is the detection, whatever the
transaction it fires on). Undetected anomalous entities are reported, not dropped: they lower the
detection rate and are listed. Entities without fraud do not count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from evalcore.fraud._curve import FloatArray, FraudInputError, IntArray, as_labels


@dataclass(frozen=True, eq=False)
class DetectionTimes:
    """Per anomalous entity, the delay from its first fraud to its first flag (NaN: undetected).

    `entities[j]` is the entity of `delays[j]` (its id, or its code when ids were not given).
    Summaries are over the detected entities; they are NaN when none is.
    """

    entities: NDArray[Any]
    delays: FloatArray
    mean: float
    median: float
    p95: float

    @property
    def n_anomalous(self) -> int:
        return int(self.delays.size)

    @property
    def n_detected(self) -> int:
        return int(np.count_nonzero(~np.isnan(self.delays)))

    @property
    def detection_rate(self) -> float:
        return self.n_detected / self.n_anomalous if self.n_anomalous else float("nan")

    @property
    def undetected(self) -> NDArray[Any]:
        return self.entities[np.isnan(self.delays)]


def _entity_codes(entities: ArrayLike, n: int) -> tuple[IntArray, NDArray[Any]]:
    values = np.asarray(entities)
    if values.shape != (n,):
        raise FraudInputError(f"entities must be aligned with the labels: {values.size} and {n}")
    ordered = np.sort(values)
    ids = ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if n else ordered
    return np.searchsorted(ids, values).astype(np.int64), ids


def time_to_detection(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    entities: ArrayLike,
    timestamps: ArrayLike,
    *,
    entity_ids: ArrayLike | None = None,
) -> DetectionTimes:
    """Delays in the unit of `timestamps` (seconds when the reader parses ISO dates).

    `entities` are ids, or integer codes 0..m-1 when `entity_ids` names them. Seed 004 takes one
    anomaly time and one detection time per anomaly; this derives both from the scored examples.
    The 95th percentile interpolates linearly (`np.percentile`), as seed 004.

    >>> times = time_to_detection([0, 1, 0, 1, 1], [0, 0, 1, 0, 0], ["a", "a", "a", "b", "b"], [0, 10, 25, 3, 4])
    >>> times.delays.tolist(), times.undetected.tolist(), times.detection_rate
    ([15.0, nan], ['b'], 0.5)
    """
    labels = as_labels(y_true)
    flagged = as_labels(y_pred)
    n = labels.size
    if flagged.size != n:
        raise FraudInputError(f"predictions must be aligned with the labels: {flagged.size} and {n}")
    times = np.asarray(timestamps, dtype=np.float64)
    if times.shape != (n,) or not np.isfinite(times).all():
        raise FraudInputError("timestamps must be finite numbers, one per example")
    if entity_ids is None:
        codes, ids = _entity_codes(entities, n)
    else:
        ids = np.asarray(entity_ids)
        codes = np.asarray(entities).astype(np.int64)
        if codes.shape != (n,) or (n and (codes.min() < 0 or codes.max() >= ids.size)):
            raise FraudInputError("entity codes must index entity_ids, one per example")
    onset = np.full(ids.size, np.inf)
    np.minimum.at(onset, codes[labels], times[labels])
    after_onset = flagged & (times >= onset[codes])
    detected = np.full(ids.size, np.inf)
    np.minimum.at(detected, codes[after_onset], times[after_onset])
    anomalous = np.flatnonzero(np.isfinite(onset))
    delays = detected[anomalous] - onset[anomalous]
    delays[np.isinf(delays)] = np.nan
    found = delays[~np.isnan(delays)]
    summary = (
        (float(found.mean()), float(np.median(found)), float(np.percentile(found, 95)))
        if found.size
        else (float("nan"),) * 3
    )
    return DetectionTimes(ids[anomalous], delays, *summary)
