"""``manage.py runworkers`` refusing what it is given before it starts any process
(its runs are in ``tests/integration/management/commands/test_runworkers.py``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from django_sqlqueue.models import Worker


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--processes", "0"], "argument --processes: 0 is less than 1"),
        (["--processes", "two"], "argument --processes: 'two' is not a whole number"),
        (["--threads", "-1"], "argument --threads: -1 is less than 1"),
        (["--batch-size", "0"], "argument --batch-size: 0 is less than 1"),
        (["--batch-size", "100001"], "argument --batch-size: 100001 is more than 100000, the most one claim takes"),
        (["--max-jobs", "1.5"], "argument --max-jobs: '1.5' is not a whole number"),
        (["--max-jobs-per-process", "0"], "argument --max-jobs-per-process: 0 is less than 1"),
        (["--max-memory", "200MB"], "argument --max-memory: '200MB' is not a whole number"),
        (["--queues", "mail,,reports"], "argument --queues: a queue name must be a non-empty string, not ''"),
        (["--queues", "q" * 101], "longer than 100 characters"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("runworkers", *args)


@pytest.mark.django_db
def test_queue_outside_sqlqueue_queues_is_refused(settings: Any) -> None:
    settings.SQLQUEUE_QUEUES = ["default", "mail"]
    with pytest.raises(CommandError, match=re.escape("--queues names ['reports'], not in SQLQUEUE_QUEUES")):
        call_command("runworkers", "--queues", "mail,reports")
    assert not Worker.objects.exists()
