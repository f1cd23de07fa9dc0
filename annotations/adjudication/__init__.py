"""Adjudication, the final grade of the pairs a qrels build drops because the annotators disagree: the
queue and the grades (`services`), and their pages (`views`) and API (`api`)."""
