"""Admin of the platform-wide models: the worker heartbeat, teams and their members, sessions."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from evalplatform.models import Session, Team, TeamMembership, WorkerHeartbeat


class ReadOnlyAdmin(admin.ModelAdmin):
    """Rows that the platform writes (workers, triggers, sign-ins): viewable, never added or changed here;
    deleted only where the admin's own class allows it."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class KeptRowsAdmin(ReadOnlyAdmin):
    """Rows another part keeps in step (triggers, sign-ins): not deleted here either."""

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(WorkerHeartbeat)
class WorkerHeartbeatAdmin(admin.ModelAdmin):
    list_display = ["hostname", "last_seen", "beats"]
    search_fields = ["hostname"]
    readonly_fields = ["hostname", "last_seen", "beats"]


class TeamMembershipInline(admin.TabularInline):
    model = TeamMembership
    extra = 1
    raw_id_fields = ["user"]
    fields = ["user", "role", "created_at"]
    readonly_fields = ["created_at"]


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "created_at"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [TeamMembershipInline]


@admin.register(TeamMembership)
class TeamMembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "team", "role", "created_at"]
    list_filter = ["role", "team"]
    search_fields = ["user__username", "team__slug"]
    list_select_related = ["user", "team"]
    raw_id_fields = ["user", "team"]


@admin.register(Session)
class SessionAdmin(KeptRowsAdmin):
    """Who is signed in until when: the sessions by user and expiry, read-only. Neither a session's key (a
    credential) nor its data is shown, and no page or form holds the key (no links, no actions); changing a
    user's password signs them out everywhere."""

    list_display = ["user_id", "expire_date"]
    list_display_links = None
    actions = None
    list_filter = ["expire_date"]
    search_fields = ["=user_id"]
    ordering = ["-expire_date"]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None and super().has_view_permission(request)  # the list, never a session's page
