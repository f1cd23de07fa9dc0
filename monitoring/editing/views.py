"""Edit (name, description, tags), archive or unarchive, and delete with a confirmation naming what else
goes: the same three pages for each kind of `monitoring.editing.services.KINDS`, for the team's editors."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_http_methods, require_POST

from evalplatform.auth import SignedInRequest
from evalplatform.errors import InputError
from evalplatform.forms import ConfirmForm
from evalplatform.teams import get_team_for_member
from monitoring.editing import services
from monitoring.editing.forms import ItemEditForm


def _item(request: SignedInRequest, team: str, kind: str, pk: int) -> tuple[Any, services.Kind, Any]:
    membership = get_team_for_member(request.user, team, write=True)
    chosen = services.KINDS[kind]
    return membership, chosen, chosen.get(membership.team, pk)


def _team_list(item: Any, kind: services.Kind) -> str:
    return reverse("monitoring:team", args=[item.team.slug]) + f"#{kind.list_anchor}"


@login_required
@require_http_methods(["GET", "POST"])
def item_edit(request: SignedInRequest, team: str, pk: int, kind: str) -> HttpResponse:
    membership, chosen, item = _item(request, team, kind, pk)
    initial = {"name": item.name, "description": item.description, "tags": ", ".join(item.tags)}
    optional = isinstance(item, services.NAME_OPTIONAL)
    form = ItemEditForm(request.POST or None, initial=initial, name_required=not optional)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.item_update(
                item=item, name=data["name"], description=data["description"], tags=data["tags"]
            )
        except InputError as exc:
            form.add_error("name", str(exc))
        else:
            messages.success(request, f"Saved the {chosen.title(item)}.")
            return redirect(item.get_absolute_url())
    context = {"team": membership.team, "membership": membership, "form": form, "item": item, "kind": chosen,
               "title": f"Edit the {chosen.title(item)}"}  # fmt: skip
    return render(request, "monitoring/item_edit.html", context, status=400 if form.errors else 200)


def _back(request: HttpRequest, default: str) -> str:
    back = request.POST.get("next", "")
    if back and url_has_allowed_host_and_scheme(back, allowed_hosts={request.get_host()}):
        return back
    return default


@login_required
@require_POST
def item_archive(request: SignedInRequest, team: str, pk: int, kind: str) -> HttpResponse:
    """POST `archived=1` hides it from the team's lists and leaderboards, `archived=0` shows it again; any
    other body changes nothing (400)."""
    membership, chosen, item = _item(request, team, kind, pk)
    wanted = request.POST.get("archived")
    if wanted not in {"0", "1"}:
        return HttpResponse(
            "Say archived=1 (archive) or archived=0 (unarchive).", status=400, content_type="text/plain"
        )
    services.item_update(item=item, archived=wanted == "1")
    messages.success(request, f"{'Archived' if item.archived else 'Unarchived'} the {chosen.title(item)}.")
    return redirect(_back(request, item.get_absolute_url()))


@login_required
@require_http_methods(["GET", "POST"])
def item_delete(request: SignedInRequest, team: str, pk: int, kind: str) -> HttpResponse:
    """A confirmation naming what else goes, with counts (GET), then the deletion (POST with the
    confirmation); an empty POST changes nothing (400)."""
    membership, chosen, item = _item(request, team, kind, pk)
    title = chosen.title(item)
    form = ConfirmForm(request.POST or None, expected=f"delete {chosen.slug} {item.pk}")
    if request.method == "POST" and form.is_valid():
        back = _team_list(item, chosen)
        services.item_delete(item=item)
        messages.success(request, f"Deleted the {title}.")
        return redirect(back)
    context = {
        "title": f"Delete the {title}?",
        "consequences": [line.text for line in services.delete_consequences(item) if line.text],
        "form": form, "error": "", "button": f"Delete the {chosen.noun}",
        "cancel": item.get_absolute_url(), "team": membership.team,
    }  # fmt: skip
    return render(
        request, "evalplatform/confirm.html", context, status=200 if request.method == "GET" else 400
    )
