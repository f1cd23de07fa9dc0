"""Retrieval evaluations: a run against a qrels source, comparisons of several runs, leaderboards.

`models` (jobs and results), `services` (the jobs), `selectors` (the read side the pages, the API and
the commands share), `forms`, `charts` (the dashboards' figures), `api` and `views` (one module per
topic).
"""
