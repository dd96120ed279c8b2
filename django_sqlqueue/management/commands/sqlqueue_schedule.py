"""``manage.py sqlqueue_schedule``: the recurring jobs of ``SQLQUEUE_SCHEDULE`` and their
next run times, read from settings, so that an expression can be checked before it is
deployed. Needs no database; when the schedules' table is there it shows each entry's
last run too, and the schedules defined in the admin after settings' entries."""

from __future__ import annotations

import datetime
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import Error

from django_sqlqueue.conf import conf
from django_sqlqueue.db import recurrence
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.management.arguments import positive_int
from django_sqlqueue.models import Schedule
from django_sqlqueue.rules.recurrence import DefinedIn, Entry, cronsim_installed, wall_time


class Command(BaseCommand):
    help = (
        "List SQLQUEUE_SCHEDULE's entries, then the schedules defined in the admin, with their next run "
        "times, in each entry's time zone."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--count", type=positive_int, default=5, help="How many run times to show per entry (default 5)."
        )

    def handle(self, *, count: int, **options: Any) -> None:
        try:
            entries = conf.SQLQUEUE_SCHEDULE
        except ImproperlyConfigured as error:
            raise CommandError(str(error)) from error
        rows = _rows()
        defined_here = {key: row for key, row in rows.items() if row.defined_in == DefinedIn.ADMIN}
        if not entries and not defined_here:
            self.stdout.write("SQLQUEUE_SCHEDULE is empty: no recurring jobs.")
            return
        crons = [entry for entry in entries.values() if entry.cron] + [row for row in defined_here.values() if row.cron]
        if not cronsim_installed() and crons:
            raise CommandError('cron entries need cronsim: pip install "django-sqlqueue[cron]"')
        now = datetime.datetime.now(datetime.timezone.utc)
        for key, entry in entries.items():
            state = "enabled" if entry.enabled else "disabled in settings"
            row = rows.get(key)
            if row is not None and row.defined_in == DefinedIn.ADMIN:
                row = None  # a schedule of the admin's of the same name, shown below
            elif row is not None and entry.enabled and not row.enabled:
                state = "disabled in the admin"
            self._show(entry, state, row, now, count)
        for key, row in defined_here.items():
            try:
                entry = recurrence.entry_of(row)
            except ImproperlyConfigured as error:
                self.stdout.write(f"{key}: defined in the admin, enqueues nothing: {error}")
                continue
            self._show(entry, f"{'enabled' if row.enabled else 'disabled'}, defined in the admin", row, now, count)

    def _show(self, entry: Entry, state: str, row: Schedule | None, now: datetime.datetime, count: int) -> None:
        """One entry: what it runs, its state, its last run when it has a row, its next ticks."""
        self.stdout.write(f"{entry.key}: {entry.task}, {entry.expression} ({entry.tz}), missed={entry.missed}, {state}")
        if row is not None:
            last = "never" if row.last_run_at is None else recurrence.shown(row.last_run_at, entry.tz)
            job = "" if row.last_job_id is None else f" (job #{row.last_job_id})"
            self.stdout.write(f"  last run: {last}{job}")
        for tick in entry.next_ticks(now, count):
            self.stdout.write(f"  {wall_time(tick, entry.tz)}")


def _rows() -> dict[str, Schedule]:
    """The schedules' rows when the database and the table are there; none otherwise."""
    try:
        return {row.key: row for row in Schedule.objects.using(queue_db(Schedule)).order_by("key")}
    except Error:
        return {}
