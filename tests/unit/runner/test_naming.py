"""The names ``runworkers`` writes (``runner/naming.py``): the longest ``--name`` prefix
it accepts gives names that fit their columns exactly, on every database."""

from __future__ import annotations

import datetime
import socket

import pytest
from django.db import DEFAULT_DB_ALIAS

from django_sqlqueue.db import leadership
from django_sqlqueue.models import Job, Leader, Worker
from django_sqlqueue.runner.naming import (
    WIDEST_NUMBER,
    WIDEST_PID,
    holder_name,
    longest_prefix,
    name_prefix_problem,
    worker_name,
)
from tests.testapp.tasks import add


@pytest.mark.django_db
def test_the_longest_prefix_makes_the_widest_names_fit_exactly() -> None:
    holder = holder_name("p" * longest_prefix(), WIDEST_PID)
    name = worker_name(holder, WIDEST_NUMBER)
    assert len(name) == 255
    assert name.startswith(f"{'p' * longest_prefix()}{socket.gethostname()}:{WIDEST_PID}:{WIDEST_NUMBER}:")
    Worker.objects.create(name=name, host=socket.gethostname(), pid=WIDEST_PID)
    job = Job.objects.enqueue(add, (1, 2))
    Job.objects.filter(pk=job.pk).update(worker=name)
    assert leadership.acquire(holder, datetime.timedelta(seconds=60), DEFAULT_DB_ALIAS)
    assert Worker.objects.get().name == name
    assert Job.objects.get(pk=job.pk).worker == name
    assert Leader.objects.get().holder == holder


def test_a_prefix_one_character_longer_is_refused_with_the_limit() -> None:
    longest = longest_prefix()
    assert name_prefix_problem("p" * longest) is None
    assert name_prefix_problem("p" * (longest + 1)) == (
        f"{longest + 1} characters is too long: at most {longest} fit on this host, as each worker's name adds "
        f"{socket.gethostname()!r}, the supervisor's pid, a process number and a tag (host:pid:n:xxxx) and must "
        "fit the 255 characters of a worker's name"
    )


def test_a_prefix_no_database_can_store_is_refused() -> None:
    assert name_prefix_problem("ci\x00") == "'ci\\x00' holds the character NUL (\\x00), which PostgreSQL cannot store"
