"""Load the demo data: accounts with known passwords (printed), for `make demo`."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from evalplatform.demo import demo_accounts_create


class Command(BaseCommand):
    help = (
        "Create the demo accounts (admin, a project lead, two annotators, an analyst) and print their logins."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = demo_accounts_create()
        if options["json"]:
            rows = [
                {"username": a.username, "password": a.password, "role": a.role.value if a.role else "admin"}
                for a in accounts
            ]
            self.stdout.write(json.dumps({"accounts": rows}))
            return
        self.stdout.write(self.style.SUCCESS("Demo logins (local demo only):"))
        for account in accounts:
            role = account.role.label if account.role else "Admin (superuser)"
            self.stdout.write(f"  {account.username:<10} {account.password:<20} {role}")
