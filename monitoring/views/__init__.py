"""HTML pages of the evaluation service, by topic: a team's home and job states (`teams`), uploads
(`uploads`), starting jobs (`jobs`), the leaderboard (`leaderboard`), a run's page (`runs`) and a
comparison's page (`comparisons`).

Views are thin: each looks its team up through `evalplatform.teams.get_team_for_member` (404 to
non-members, 403 to a viewer asking to write), reads through `monitoring.selectors` and renders. No
measure is computed in a request: the pages lay out the rows the jobs stored.
"""
