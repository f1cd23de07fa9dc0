"""The error a service raises for input it refuses, wherever the input came from.

`InputError` is bad input from a user: a form, an API request, a command's arguments, an uploaded file.
Its message is written for that user, and the view, the API handler or the command that called the
service shows it (a form error, a 400, a one-line refusal). Framework-free: services raise it without
knowing who called them, and jobs are not involved (`evalplatform.jobs.JobError`, for a job that cannot
be done as asked, is a kind of it, so a job that meets bad input fails with the message).
"""

from __future__ import annotations


class InputError(Exception):
    """Input refused as given; the message says why, for the user who gave it."""
