"""Pools built from a team's runs for a linked judging project: models, services (the build and the
re-prioritisation jobs), pages, API and command (`pool_runs`). See docs/judging.md, "Pools from runs"."""
