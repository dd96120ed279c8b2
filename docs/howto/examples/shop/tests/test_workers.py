"""The deploying guide's command, ``runworkers``, runs the shop's jobs: its
worker processes find the shop's tasks in the installed app's ``tasks.py``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from django_sqlqueue.models import Job, JobStatus
from shop import producers


@pytest.mark.django_db(transaction=True)
def test_runworkers_drains_the_shop_queues(monkeypatch):
    # The worker processes read the settings afresh: point them at this test's
    # database (the test project's settings read DB_NAME).
    monkeypatch.setenv("DB_NAME", str(connection.settings_dict["NAME"]))
    producers.enqueue_receipts([1, 2, 3])
    producers.request_export(7)
    call_command("runworkers", "--burst", "--processes", "1", stdout=StringIO())
    statuses = set(Job.objects.values_list("status", flat=True))
    assert statuses == {JobStatus.SUCCESSFUL}
