"""Template tags of adjudication, for pages whose views belong to other features (the project page)."""

from __future__ import annotations

from django import template

from annotations.adjudication.services import waiting_count
from annotations.models import Project

register = template.Library()


@register.simple_tag
def adjudication_waiting(project: Project) -> int:
    """`{% adjudication_waiting project as waiting %}`: how many pairs wait for a final grade."""
    return waiting_count(project=project)
