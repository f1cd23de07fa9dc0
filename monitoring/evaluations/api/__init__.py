"""REST API of retrieval evaluations and comparisons, under /api/teams/<team>/."""
