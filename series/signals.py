"""`series_observed`: sent once the values a job wrote are committed, with the ids of the series they
belong to and the job's provenance; the alert rules listen (`monitoring.alerts.services`), and nothing here
knows them."""

from __future__ import annotations

from django.dispatch import Signal

#: kwargs: series_ids (list[int]), job_type (str), job_id (int).
series_observed = Signal()
