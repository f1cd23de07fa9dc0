"""The monitoring app: evaluation of retrieval, recommendation and fraud systems, embedding monitors and
alerts, grouped by domain. Each slice is a package with its models, services, selectors, API, views, forms
and charts:

- `evaluations`: retrieval evaluations of a run on a qrels source, comparisons of runs, leaderboards;
- `recsys_fraud`: recommendation sets and fraud score sets, their evaluations and curves;
- `embeddings`: embedding streams, their snapshots and schedule, monitor runs;
- `alerts`: alert rules on any series, their events, notification channels and notifications;
- `files`: what a team uploads to evaluate (runs and qrels sources); `teams`: a team's home page and the
  API's list of my teams; `common`: what the slices share (API pages and shapes, the metric registry
  endpoint, the commands' file helpers).

In place: `models` (imports every slice's models, so the app label stays `monitoring`), `tasks` (Celery task
names are stored in queues and job rows), `urls` and `api_urls`, `admin`, `demo`, the management commands,
migrations, templates and static files.
"""
