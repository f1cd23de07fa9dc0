"""REST API of the evaluation service, under /api/teams/<team>/ and /api/metrics/ (see `monitoring.api_urls`).

Teams upload runs and qrels, start evaluations and comparisons on the worker, poll them, and read the
stored results; `/api/metrics/` is the metric registry. Modules by domain: `teams` (my teams), `files`
(runs and qrels sources), `evaluations` (evaluations, per-query values, the leaderboard),
`comparisons`, `metrics`; `serializers` holds every input and output shape, `pagination` the page
envelope, `queries` the API's own read queries, `actions` its one write beside the services.

Every view looks its team up through `evalplatform.teams.get_team_for_member`: non-members get a 404
for everything of the team, a viewer asking to write a 403. Bad input is a 400 whose body names the
field, `{"file": ["bm25.run:2: score is not a number"]}`; other errors are `{"detail": ...}`.
"""
