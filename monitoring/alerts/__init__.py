"""Alerts: rules on any series, the events they open and resolve, channels and notifications.
`models`, `services` (rules, checks, events), `notifications` (sending), `forms`, `api` and `views`.
"""
