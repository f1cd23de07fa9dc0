"""Reusability of a qrels source, annotator sensitivity and the topic set size planner (issue 23, points
4 to 6): jobs over `evalcore.reuse`, the qrels source's reuse page, its API and commands."""
