"""`team_members TEAM [--add PERSON --role viewer|editor] [--remove USERNAME] [--json]`: a team's members
from the command line, as its Members page manages them."""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from evalplatform.models import Team, TeamMembership
from evalplatform.people import person_find
from evalplatform.teams import LastEditorError, team_member_add, team_member_change


class Command(BaseCommand):
    help = (
        "List a team's members and their roles; with --add, add a person by username or email (an email no "
        "account uses creates one and mails it a link to set a password, on SITE_URL) or change their role; "
        "with --remove, take a member off. A team keeps one editor: the last one cannot be demoted or removed."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("team", help="the team's slug")
        parser.add_argument("--add", metavar="PERSON", help="a username or an email")
        parser.add_argument("--role", choices=TeamMembership.Role.values, default=TeamMembership.Role.VIEWER,
                            help="the role given with --add (default %(default)s)")  # fmt: skip
        parser.add_argument("--remove", metavar="USERNAME", help="a member to take off the team")
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")

    def handle(self, *args: Any, **options: Any) -> None:
        team = Team.objects.filter(slug=options["team"]).first()
        if team is None:
            raise CommandError(f"There is no team {options['team']!r}.")
        done = ""
        try:
            if options["add"]:
                member, invitation = team_member_add(
                    team=team,
                    person=person_find(options["add"]),
                    role=options["role"],
                    invited_by=None,
                    request=None,
                )
                done = f"{member.user.get_username()} is {member.get_role_display().lower()}"
                if invitation.invited:
                    done += (
                        " (invited: " + (invitation.mail_error or "a link to set a password was mailed") + ")"
                    )
            if options["remove"]:
                found = TeamMembership.objects.filter(team=team, user__username=options["remove"]).first()
                if found is None:
                    raise CommandError(f"{options['remove']!r} is no member of {team.slug}.")
                team_member_change(membership=found, role=None)
                done = f"{options['remove']} is off {team.slug}"
        except (ValidationError, LastEditorError) as error:
            raise CommandError(" ".join(getattr(error, "messages", [str(error)]))) from None
        members = list(
            TeamMembership.objects.filter(team=team).select_related("user").order_by("user__username")
        )
        rows = [{"username": m.user.get_username(), "email": m.user.email, "role": m.role,
                 "invited": not m.user.has_usable_password()} for m in members]  # fmt: skip
        if options["json"]:
            self.stdout.write(json.dumps({"team": team.slug, "done": done, "members": rows}, indent=2))
            return
        if done:
            self.stdout.write(done)
        for row in rows:
            invited = "\tinvited" if row["invited"] else ""
            self.stdout.write(f"{row['username']}\t{row['role']}{invited}")
