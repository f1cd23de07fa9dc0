"""Annotator quality and qrels builds for project leads: the precomputed snapshot and the leads'
overrides (`services`), the dashboard's figures (`charts`), the disagreement drill-down
(`disagreements`), and their pages (`views`) and API (`api`)."""
