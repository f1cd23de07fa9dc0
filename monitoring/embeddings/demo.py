"""The demo's embedding stream: a query encoder whose snapshots start healthy, drift, then collapse.

`demo_stream_load` (called by `load_demo`) gives the search team a stream `query-encoder` of 64-d
embeddings, monitored every hour, with the default alert rules notifying an email channel (Django's mail
backend: the console with `make demo`). It uploads a reference and `len(PHASES)` hourly snapshots of
`ROWS` rows, generated here deterministically:

- healthy: a fixed mean direction plus a randomly rotated Gaussian with a gently decaying spectrum
  (effective rank well above 30% of the dimension, average cosine around 0.1), like the reference;
- drift: the same shape, moved along a new direction by a growing step (the MMD test and the domain
  classifier notice it; the quality metrics do not);
- collapse: the variance pours into a few directions and more and more coordinates go dead.

Its monitor runs are made by `monitors.stream_tick`, the service beat's periodic task calls, and computed
here in-process in observed order, so the alert events on the dashboard were raised the way the schedule
raises them. Idempotent: a second load finds the stream, its snapshots (by label) and their runs.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.core.files import File
from django.utils import timezone

from evalplatform.jobs import JobStatus
from evalplatform.models import Team
from monitoring.alerts import services as alerts
from monitoring.embeddings import services as monitors
from monitoring.models import EmbeddingSnapshot, EmbeddingStream, MonitorRun, NotificationChannel

DEMO_TEAM_SLUG = "search"
DEMO_EDITOR = "analyst"
STREAM_SLUG = "query-encoder"
STREAM_NAME = "Query encoder"
STREAM_DESCRIPTION = (
    "Embeddings of the search team's incoming queries (demo data): a reference sample, then one every hour. "
    "Partway through, a new tokenizer shifts them (drift), then a bad checkpoint collapses them."
)
DIMENSION = 64
ROWS = 1_000
SEED = 2024
#: Kept small so the demo loads in a few seconds: every row in the sample and in the MMD test,
#: with 100 permutations (p >= 1/101, under the drift rule's 0.01), 10 calibration splits.
PARAMS = {
    "sample_size": ROWS,
    "mmd_sample_size": ROWS,
    "n_permutations": 100,
    "calibration_splits": 10,
    "uniformity_pairs": 10_000,
}
#: Each hourly snapshot: (phase, strength). Drift moves the mean; collapse narrows the spectrum.
PHASES: tuple[tuple[str, float], ...] = (
    ("healthy", 0.0), ("healthy", 0.0), ("healthy", 0.0), ("healthy", 0.0),
    ("drift", 0.08), ("drift", 0.2), ("drift", 0.4), ("drift", 0.65),
    ("collapse", 0.4), ("collapse", 0.6), ("collapse", 0.8), ("collapse", 1.0),
)  # fmt: skip
LAST_DRIFT = max(strength for phase, strength in PHASES if phase == "drift")
CHANNEL_NAME = "On-call email (demo)"
CHANNEL_TARGET = "oncall@example.org"


@dataclass(frozen=True)
class DemoStream:
    stream: EmbeddingStream
    runs: list[MonitorRun]


def _basis(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A random rotation, the healthy spectrum's scales, the mean, and the drift direction."""
    rotation, _ = np.linalg.qr(rng.normal(size=(DIMENSION, DIMENSION)))
    scales = 1.0 / np.sqrt(1.0 + np.arange(DIMENSION) / 12.0)
    mean = rng.normal(size=DIMENSION)
    mean *= 0.3 * np.linalg.norm(scales) / np.linalg.norm(mean)
    drift = rng.normal(size=DIMENSION)
    return rotation, scales, mean, drift / np.linalg.norm(drift) * np.linalg.norm(scales)


def demo_embeddings(phase: str, strength: float, *, seed: int) -> np.ndarray:
    """`ROWS` x `DIMENSION` float32 embeddings of one phase (see the module docstring)."""
    rotation, scales, mean, drift = _basis(np.random.default_rng(SEED))
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(ROWS, DIMENSION)) * scales
    if phase == "collapse":
        keep = max(2, int(round(DIMENSION * (1.0 - strength) * 0.25)))
        z[:, keep:] *= 1.0 - strength * 0.97
    x = z @ rotation.T + mean
    if phase == "drift":
        x += strength * drift
    if phase == "collapse":
        x += LAST_DRIFT * drift  # the shift stayed
        dead = int(round(DIMENSION * 0.3 * strength))
        x[:, :dead] = x[:, :dead].mean(axis=0)
    return x.astype(np.float32)


def _npy(array: np.ndarray, name: str) -> File[bytes]:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return File(buffer, name=name)


def _stream(team: Team) -> EmbeddingStream:
    found = EmbeddingStream.objects.filter(team=team, slug=STREAM_SLUG).first()
    if found is not None:
        return found
    channel, _ = NotificationChannel.objects.get_or_create(
        team=team,
        name=CHANNEL_NAME,
        defaults={"kind": NotificationChannel.Kind.EMAIL, "target": CHANNEL_TARGET},
    )
    creator = get_user_model().objects.filter(username=DEMO_EDITOR).first()
    return monitors.stream_create(
        team=team, slug=STREAM_SLUG, name=STREAM_NAME, description=STREAM_DESCRIPTION, dimension=DIMENSION,
        params=PARAMS, every_minutes=60, channels=[channel], created_by=creator,
    )  # fmt: skip


def demo_snapshots_upload(stream: EmbeddingStream, *, last: datetime) -> None:
    """The reference (an hour before the first snapshot) and the hourly snapshots ending at `last`; the
    ones already there (by label) are kept."""
    labels = set(stream.snapshots.values_list("label", flat=True))
    first = last - timedelta(hours=len(PHASES) - 1)
    if "reference sample" not in labels:
        reference = monitors.snapshot_upload(
            stream=stream, upload=_npy(demo_embeddings("healthy", 0.0, seed=SEED + 1), "reference.npy"),
            observed_at=first - timedelta(hours=1), label="reference sample",
        )  # fmt: skip
        monitors.stream_reference_set(stream=stream, snapshot=reference, enqueue=False)
    for hour, (phase, strength) in enumerate(PHASES):
        label = f"hour {hour:02d} ({phase})"
        if label not in labels:
            array = demo_embeddings(phase, strength, seed=SEED + 10 + hour)
            monitors.snapshot_upload(
                stream=stream, upload=_npy(array, f"hour-{hour:02d}.npy"), label=label,
                observed_at=first + timedelta(hours=hour),
            )  # fmt: skip


def demo_stream_load(*, team: Team | None = None) -> DemoStream | None:
    """The demo stream with its snapshots and monitor runs (see the module docstring); None without the
    demo search team."""
    team = team or Team.objects.filter(slug=DEMO_TEAM_SLUG).first()
    if team is None:
        return None
    stream = _stream(team)
    last = timezone.now().replace(minute=0, second=0, microsecond=0)
    demo_snapshots_upload(stream, last=last)
    monitors.stream_tick(stream_id=stream.pk, enqueue=False)  # what beat's periodic task does
    waiting = MonitorRun.objects.filter(stream=stream, status=JobStatus.PENDING).select_related("snapshot")
    for run in sorted(
        waiting, key=lambda r: (r.snapshot.kind != EmbeddingSnapshot.Kind.REFERENCE, r.observed_at)
    ):
        with alerts.alerts_checked_here():  # the alerts raised in observed order, as the worker would
            monitors.monitor_run(run_id=run.pk, split=False)
    runs = list(MonitorRun.objects.filter(stream=stream).order_by("observed_at", "pk"))
    return DemoStream(stream=stream, runs=runs)
