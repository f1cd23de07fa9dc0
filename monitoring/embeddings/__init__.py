"""Embedding monitors: a team's streams, their snapshots, the schedule, and one monitor run per
snapshot. `models`, `params`, `streams`, `runs` and `selectors` (with `services`, the calls the rest
of the app makes), `api`, `views`, `charts`, and the demo's stream (`demo`).
"""
