"""Admin of the platform-wide models: the worker heartbeat, teams and their members."""

from django.contrib import admin

from evalplatform.models import Team, TeamMembership, WorkerHeartbeat


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
