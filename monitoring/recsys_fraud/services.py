"""Recommendation sets and fraud score sets: uploads, evaluation jobs, their curves, and the read side.

The services a view, the API, a task or the demo calls, by domain:

- `uploads`: `recommendation_set_upload`, `fraud_score_set_upload` (files kept under MEDIA_ROOT, checked on
  their first lines with the core's readers; `UploadError` names the file, the line and the reason);
- `jobs`: `recommendation_evaluation_create` / `_run`, `fraud_evaluation_create` / `_run` (jobs as in
  `monitoring.evaluations.services`: same request, same evaluation; queued on commit; results written once, whole);
- `curves`: the dashboards' curves, built by the jobs from the core's statistics;
- `selectors`: the read side (team-scoped lookups, lists, metric lines with their registry specs).
"""

from monitoring.recsys_fraud.jobs import (
    TIME_LIMIT,
    OptionError,
    fraud_evaluation_create,
    fraud_evaluation_run,
    recommendation_evaluation_create,
    recommendation_evaluation_run,
)
from monitoring.recsys_fraud.uploads import FileRefused, fraud_score_set_upload, recommendation_set_upload

__all__ = [
    "TIME_LIMIT",
    "FileRefused",
    "OptionError",
    "fraud_evaluation_create",
    "fraud_evaluation_run",
    "fraud_score_set_upload",
    "recommendation_evaluation_create",
    "recommendation_evaluation_run",
    "recommendation_set_upload",
]
