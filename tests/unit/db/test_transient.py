"""``retry_transient`` (``db/transient.py``): a short transaction run again when the
database gave up on it for a reason that passes, and only then."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import F

from django_sqlqueue.db.engines.errors import is_transient
from django_sqlqueue.db.transient import ATTEMPTS, retry_transient
from django_sqlqueue.models import Job
from tests.support.locks import held_elsewhere, impatient
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db(transaction=True)


def transient() -> OperationalError:
    """What SQLite says when another connection keeps the write lock: transient on any database."""
    return OperationalError("database is locked")


def bump(job: Job) -> int:
    """A write: the job's priority, one up."""
    return Job.objects.filter(pk=job.pk).update(priority=F("priority") + 1)


def priority(job: Job) -> int:
    return Job.objects.values_list("priority", flat=True).get(pk=job.pk)


class Flaky:
    """Work that bumps the job's priority, then raises ``errors`` one per call while they
    last; it notes whether each call ran inside a transaction."""

    def __init__(self, job: Job, *errors: Exception) -> None:
        self.job = job
        self.errors = list(errors)
        self.in_transaction: list[bool] = []

    def __call__(self) -> str:
        self.in_transaction.append(connection.in_atomic_block)
        bump(self.job)
        if self.errors:
            raise self.errors.pop(0)
        return "done"

    @property
    def calls(self) -> int:
        return len(self.in_transaction)


def test_a_transient_error_from_the_database_is_retried_and_the_work_then_succeeds() -> None:
    job = Job.objects.enqueue(noop)
    seen: list[OperationalError] = []
    with held_elsewhere(job) as release, impatient():

        def release_after_the_first_failure(execute: Callable[..., Any], *args: Any) -> Any:
            try:
                return execute(*args)
            except OperationalError as error:
                seen.append(error)
                release()
                raise

        with connection.execute_wrapper(release_after_the_first_failure):
            assert retry_transient("default", lambda: bump(job)) == 1
    assert len(seen) == 1
    assert is_transient(seen[0])
    assert priority(job) == 1


def test_a_failed_attempt_is_rolled_back_before_the_next() -> None:
    job = Job.objects.enqueue(noop)
    work = Flaky(job, transient(), transient())
    assert retry_transient("default", work) == "done"
    assert work.in_transaction == [True, True, True]
    assert priority(job) == 1


def test_without_atomic_the_work_runs_outside_a_transaction() -> None:
    job = Job.objects.enqueue(noop)
    work = Flaky(job, transient())
    assert retry_transient("default", work, atomic=False) == "done"
    assert work.in_transaction == [False, False]
    # Nothing rolled the failed attempt's write back: one statement is its own transaction.
    assert priority(job) == 2


@pytest.mark.parametrize(
    "error",
    [OperationalError("no such table: elsewhere"), IntegrityError("duplicate key"), ValueError("a bug in the work")],
    ids=["operational", "integrity", "not-a-database-error"],
)
@pytest.mark.parametrize("atomic", [True, False], ids=["atomic", "not-atomic"])
def test_an_error_that_is_not_transient_is_raised_at_once(error: Exception, atomic: bool) -> None:
    job = Job.objects.enqueue(noop)
    work = Flaky(job, error)
    with pytest.raises(type(error)) as excinfo:
        retry_transient("default", work, atomic=atomic)
    assert excinfo.value is error
    assert work.calls == 1


def test_inside_the_callers_transaction_a_transient_error_is_raised_without_retrying() -> None:
    job = Job.objects.enqueue(noop)
    error = transient()
    work = Flaky(job, error)
    with transaction.atomic():
        with pytest.raises(OperationalError) as excinfo:
            retry_transient("default", work)
        # Only the work's savepoint was rolled back: the caller's transaction goes on.
        assert priority(job) == 0
    assert excinfo.value is error
    assert work.calls == 1


def test_a_transient_error_that_persists_is_raised_after_every_attempt() -> None:
    job = Job.objects.enqueue(noop)
    errors = [transient() for _ in range(ATTEMPTS + 1)]
    work = Flaky(job, *errors)
    with pytest.raises(OperationalError) as excinfo:
        retry_transient("default", work)
    assert work.calls == ATTEMPTS
    assert excinfo.value is errors[ATTEMPTS - 1]
    assert priority(job) == 0
