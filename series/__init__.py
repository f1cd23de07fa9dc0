"""One table of metric values and the series that produce them.

Every job that computes scalar metrics (retrieval evaluations and comparisons, recommendation and fraud
evaluations, embedding monitor runs, judging-quality recomputes) writes them through one function,
`series.services.metric_values_write`, into one keyed table, `MetricValue`: one row per (job, metric,
subgroup), so a re-run updates its rows and never duplicates them. A `Series` is what produces
observations over time (an embedding stream; a run name on a qrels source; a recommendation or fraud
set name; a judging project; an annotator within a project); each has a family of the metric registry,
and every metric of that family can be charted over time (`series.selectors.series_history`) and
watched by an alert rule (`series.selectors.series_observations`, the one observation reader).

The app imports neither `annotations` nor `monitoring`: both write into it, and a job's values name
their job by its model label and id (the provenance), not by a foreign key.
"""
