"""The garbage collector's pause around ``enqueue_many`` (``managers/collector.py``): off while
it builds, checks and writes, on again however it ends, shared by calls that overlap
in threads, and never turned on where the project had turned it off."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.managers import collector
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_the_collector_is_off_inside_and_on_after_however_the_block_ends() -> None:
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ZeroDivisionError), collector.paused():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_a_collector_the_project_turned_off_stays_off() -> None:
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_calls_in_threads_share_one_pause() -> None:
    inside, leave = threading.Event(), threading.Event()

    def other() -> None:
        with collector.paused():
            inside.set()
            leave.wait(10)

    with collector.paused():
        thread = threading.Thread(target=other)
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other call still runs: its pause goes on
    leave.set()
    thread.join(10)
    assert gc.isenabled()


@pytest.mark.django_db
def test_enqueue_many_builds_and_writes_with_the_collector_off() -> None:
    seen: list[bool] = []

    def built() -> Iterator[Job]:
        for _ in range(3):
            seen.append(gc.isenabled())
            yield Job.objects.build(noop)

    assert all(job.created for job in Job.objects.enqueue_many(built()))
    assert (seen, gc.isenabled()) == ([False] * 3, True)


@pytest.mark.django_db
def test_enqueue_many_turns_the_collector_on_again_when_it_refuses_the_jobs() -> None:
    bad = Job.objects.build(noop)
    bad.priority = 1000
    with pytest.raises(InvalidJobError):
        Job.objects.enqueue_many([Job.objects.build(noop), bad])
    assert gc.isenabled()
    assert not Job.objects.exists()
