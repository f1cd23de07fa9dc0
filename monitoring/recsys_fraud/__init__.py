"""Recommendation sets and fraud score sets: `models`, `uploads`, evaluation `jobs` and their
`curves` (with `services`, the calls a view, the API, a task or the demo makes), `selectors`, `api`,
`views` and `charts`.
"""
