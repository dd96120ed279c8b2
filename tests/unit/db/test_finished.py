"""Telling waiters which jobs finished (``db/finished.py``): the payloads, and that a
finish sends them once it commits, naming the jobs that reached a final status only."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction

from django_sqlqueue.db import finished
from django_sqlqueue.db.waiting import FinishNews
from django_sqlqueue.db.wakeup import send_datagrams
from django_sqlqueue.models import Job
from tests.testapp.tasks import add, noop


def test_ids_are_split_into_payloads_no_longer_than_the_most() -> None:
    ids = list(range(10**6, 10**6 + 2000))
    payloads = finished.encode(ids)
    assert len(payloads) == 4
    assert all(len(payload) <= finished.MOST_PAYLOAD for payload in payloads)
    assert set().union(*map(finished.decode, payloads)) == set(ids)
    assert finished.encode([]) == []


def test_a_payload_names_its_ids_and_nothing_else() -> None:
    assert finished.decode(b"12 7\n x -3 \xff 9") == {12, 7, 9}
    assert finished.decode("") == set()


@pytest.mark.django_db(transaction=True)
def test_told_on_commit(short_folder: object) -> None:
    """A finish in a transaction tells a waiter once it commits."""
    done, retried = Job.objects.enqueue(add, (1, 2)), Job.objects.enqueue(noop, max_attempts=3)
    claimed = {job.pk: job for job in Job.objects.claim(worker_id="w", limit=2)}
    news = FinishNews.open("default")
    try:
        assert (news.listener, news.sock) != (None, None)
        with transaction.atomic():
            Job.objects.finish(
                worker_id="w", succeeded={claimed[done.pk]: 3}, failed={claimed[retried.pk]: ValueError("again")}
            )
            assert not news.wait(done.pk, 0.05), "told before the finish committed"
        assert news.wait(done.pk, 5)
        # The retried job has not finished: no news names it.
        assert not news.wait(retried.pk, 0.05)
    finally:
        news.close()


@pytest.mark.django_db(transaction=True)
def test_told_in_autocommit(short_folder: object) -> None:
    job = Job.objects.enqueue(add, (1, 2))
    (claimed,) = Job.objects.claim(worker_id="w", limit=1)
    news = FinishNews.open("default")
    try:
        assert (news.listener, news.sock) != (None, None)
        Job.objects.finish(worker_id="w", succeeded={claimed: 3})
        assert news.wait(job.pk, 5)
    finally:
        news.close()


@pytest.mark.django_db(transaction=True)
def test_none_told(short_folder: object) -> None:
    """No waiters' folder on this host: the finish sends nothing, and raises nothing."""
    assert send_datagrams("default", [b"1"], waiting=True) == 0
    Job.objects.enqueue(add, (1, 2))
    (claimed,) = Job.objects.claim(worker_id="w", limit=1)
    assert Job.objects.finish(worker_id="w", succeeded={claimed: 3}) == 1


@pytest.mark.django_db(transaction=True)
def test_a_success_that_deletes_its_job_tells_a_waiter(short_folder: object, settings: Any) -> None:
    settings.SQLQUEUE_RETENTION = {"SUCCESSFUL": 0}
    job = Job.objects.enqueue(add, (1, 2))
    (claimed,) = Job.objects.claim(worker_id="w", limit=1)
    news = FinishNews.open("default")
    try:
        assert Job.objects.finish(worker_id="w", succeeded={claimed: 3}) == 1
        assert not Job.objects.filter(pk=job.pk).exists()
        assert news.wait(job.pk, 5)
    finally:
        news.close()
