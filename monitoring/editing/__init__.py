"""Editing what a team made: rename, describe, tag, archive and delete its runs, qrels sources, evaluations,
recommendation sets and fraud score sets, from the web (`views`) and the API (the kinds' own detail
endpoints), through one service per kind (`services`)."""
