"""What other apps hear from the judging workflow, without annotations importing them.

`answers_hook_register(fn)` (from an app's `AppConfig.ready`) asks for `fn(project_id)` to be called after
a transaction that changed a project's counted answers commits: an answer, a skip or an undo, in a
project whose tasks have priorities (`Project.has_priorities`: a pool built from runs re-orders its
pending tasks by the answers). Projects without priorities never pay for it: the services only schedule
the call when the flag, read with the project row, is set.

`project_links_register(fn)` adds links to the lead's project page: `fn(project)` gives (label, url)
pairs (monitoring's pool pages, say), which annotations shows without knowing their app.

A hook runs after the commit, in the request, so it must be quick (queue a job, debounced) and must not
fail the answer: an exception it raises is logged and swallowed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial

from django.db import transaction

from annotations.models import Project

logger = logging.getLogger(__name__)

AnswersHook = Callable[[int], object]

_answers_hooks: list[AnswersHook] = []

ProjectLinks = Callable[[Project], list[tuple[str, str]]]

_project_links: list[ProjectLinks] = []


def project_links_register(links: ProjectLinks) -> None:
    """Show `links(project)`, (label, url) pairs, among the actions of the lead's project page."""
    if links not in _project_links:
        _project_links.append(links)


def project_links(project: Project) -> list[tuple[str, str]]:
    return [link for links in _project_links for link in links(project)]


def answers_hook_register(hook: AnswersHook) -> None:
    """Call `hook(project_id)` after each commit that changed the answers of a project with priorities."""
    if hook not in _answers_hooks:
        _answers_hooks.append(hook)


def answers_changed_on_commit(project: Project) -> None:
    """Schedule the hooks for after the current transaction's commit, if the project has priorities."""
    if project.has_priorities and _answers_hooks:
        transaction.on_commit(partial(answers_changed, project_id=project.pk))


def answers_changed(*, project_id: int) -> None:
    for hook in list(_answers_hooks):
        try:
            hook(project_id)
        except Exception:  # an answer is never failed by what listens to it
            logger.exception("answers hook %r failed for project %s", hook, project_id)
