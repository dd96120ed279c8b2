"""Testing code that enqueues jobs, without starting workers: find what was enqueued,
run the ready jobs in the test's own process through the real claim and finish, or run
one task the way a worker would.

Everything here runs on the test's connection, so it works inside a test's transaction
(pytest-django's ``db`` fixture, Django's ``TestCase``): nothing commits, and the jobs
vanish with the test. ``django_sqlqueue.pytest_plugin`` offers it all as the
``sqlqueue`` fixture."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db.models import Q

from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import JobStatus
from django_sqlqueue.rules.registry import get_task
from django_sqlqueue.runner.execution import JobOutcome, attempt
from django_sqlqueue.runner.middleware import chain

if TYPE_CHECKING:
    from typing import TypeAlias

    from django_sqlqueue.backends.compat import Task

    #: A ``@job`` function, a Django ``@task``, or a task's registered name.
    AnyTask: TypeAlias = Callable[..., Any] | str | Task[..., Any]

#: The worker every job run here is claimed by, as the admin and ``job.worker`` show.
WORKER_ID = "django_sqlqueue.testing"
#: ``run_jobs`` stops with an error after this many attempts: a job that enqueues
#: itself would otherwise keep it running for ever.
MAX_ATTEMPTS_RUN = 10_000
#: ``run_jobs`` waits this long, at most, for due jobs that their rate limits (or
#: concurrency keys held elsewhere) keep back, before it fails saying so.
HELD_BACK_SECONDS = 10.0
HELD_BACK_POLL_SECONDS = 0.02


class Ran(NamedTuple):
    """What :func:`run_jobs` did: its attempts, by outcome (the words of
    ``rules.lifecycle.OUTCOMES``)."""

    succeeded: int = 0
    #: Failed with attempts left: back to ``READY`` after a backoff.
    retried: int = 0
    #: Failed for good: ``FAILED``.
    failed: int = 0
    #: Stopped on a cancel request (``JobCancelled``): ``CANCELLED``.
    cancelled: int = 0
    #: Snoozed (``raise Snooze``): back to ``READY`` after its delay, its attempt not counted.
    snoozed: int = 0
    #: Never started: its ``expires_at`` had come, and ``run_jobs`` ended it ``CANCELLED``
    #: as the maintenance leader would (``Job.objects.expire``).
    expired: int = 0


def enqueued(
    task: AnyTask | None = None,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    queue: str | None = None,
) -> list[Job]:
    """The jobs waiting to run (``READY``, due or scheduled) that match what is given, oldest first.

    ``task`` is a ``@job`` function, a Django ``@task``, or a task's registered name;
    ``args`` and ``kwargs`` match as they were stored, after their JSON round trip (a
    tuple matches a list). What is left out matches anything."""
    jobs = Job.objects.on_queue_db().filter(status=JobStatus.READY).order_by("pk")
    if task is not None:
        jobs = jobs.filter(task=_task_name(task))
    if queue is not None:
        jobs = jobs.filter(queue=queue)
    wanted = {"args": _as_stored(list(args)) if args is not None else None, "kwargs": _as_stored(kwargs)}
    return [
        job for job in jobs if all(value is None or getattr(job, field) == value for field, value in wanted.items())
    ]


def assert_enqueued(
    task: AnyTask | None = None,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    queue: str | None = None,
    count: int | None = None,
) -> list[Job]:
    """Fail unless a job matching what is given is waiting to run (exactly ``count`` of
    them, when given); returns the matching jobs. The message lists what is waiting."""
    found = enqueued(task, args=args, kwargs=kwargs, queue=queue)
    if (count is None and not found) or (count is not None and len(found) != count):
        expected = "a job" if count is None else f"{count} job(s)"
        raise AssertionError(
            f"Expected {expected} matching {_described(task, args, kwargs, queue)}, found {len(found)}. "
            f"Waiting to run: {_waiting()}"
        )
    return found


def refute_enqueued(
    task: AnyTask | None = None,
    *,
    args: Sequence[Any] | None = None,
    kwargs: Mapping[str, Any] | None = None,
    queue: str | None = None,
) -> None:
    """Fail if any job matching what is given is waiting to run."""
    if found := enqueued(task, args=args, kwargs=kwargs, queue=queue):
        raise AssertionError(
            f"Expected no job matching {_described(task, args, kwargs, queue)}, found {len(found)}: "
            f"{', '.join(_job_line(job) for job in found)}"
        )


def run_jobs(
    queues: Iterable[str] | None = None, *, scheduled: bool = False, held_back: float = HELD_BACK_SECONDS
) -> Ran:
    """Run the ready jobs of ``queues`` (every queue when None) in this process, one at a
    time through the real claim and finish, until none is ready: jobs they enqueue run too.

    A failure with attempts left waits out its backoff like any other, so it is not run
    again here; with ``scheduled=True`` every waiting job is made due first, on each
    round, so jobs enqueued with a delay run, and so do retries until their last attempt.
    Due jobs that a rate limit (or a concurrency key held by jobs running elsewhere)
    keeps back are waited for, as ``runworkers --burst`` does, for ``held_back`` seconds
    at most: past that it raises ``AssertionError`` saying how many are left.
    Jobs past their ``expires_at`` are never started: they end ``CANCELLED`` (expired),
    counted in ``expired``. Returns the attempts by outcome. Raises ``AssertionError`` past
    ``MAX_ATTEMPTS_RUN`` attempts (a job that enqueues itself). ``SQLQUEUE_MIDDLEWARE``
    wraps every attempt, its chain built once per call."""
    queues = None if queues is None else list(queues)
    through = chain(WORKER_ID)
    ran = Ran()
    waiting_since: float | None = None
    while True:
        if scheduled:
            _make_due(queues)
        batch = Job.objects.claim(worker_id=WORKER_ID, queues=queues, limit=1)
        if not batch:
            ran = ran._replace(expired=ran.expired + Job.objects.expire(queues))
            due = Job.objects.on_queue_db().ready().in_queues(queues).count()
            if not due:
                return ran
            waiting_since = waiting_since or time.monotonic()
            if time.monotonic() - waiting_since > held_back:
                raise AssertionError(
                    f"run_jobs() waited {held_back:g} s for {due} due job(s) that their rate limits or concurrency "
                    "keys keep back: give the test settings a generous rate (SQLQUEUE_RATE_LIMITS)"
                )
            time.sleep(HELD_BACK_POLL_SECONDS)
            continue
        waiting_since = None
        ran = _tally(ran, _finish(attempt(batch[0], WORKER_ID, through)))
        if sum(ran) - ran.expired >= MAX_ATTEMPTS_RUN:
            raise AssertionError(
                f"run_jobs() ran {sum(ran) - ran.expired} attempts and jobs are still ready: does a job enqueue itself?"
            )


def perform(task: AnyTask, *args: Any, **kwargs: Any) -> Any:
    """Run ``task`` once, as a worker would, and return its result as the job stores it.

    The job is enqueued (so its arguments are checked and make their JSON round trip),
    claimed, run through ``SQLQUEUE_MIDDLEWARE`` with the job signals sent, and
    finished: a tuple returned comes back a list, and what the task raises is raised
    here, after its attempt is recorded. With
    ``SQLQUEUE_RETENTION["SUCCESSFUL"]`` 0 the job is deleted as it succeeds, and the
    result returned is the task's after the same round trip."""
    job = Job.objects.enqueue(_task_name(task), args, kwargs)
    batch = Job.objects.claim(worker_id=WORKER_ID, filter=Q(pk=job.pk), limit=1)
    if not batch:
        raise AssertionError(
            f"perform() could not claim job #{job.pk} ({job.task}): its concurrency key is at its limit "
            "or its rate limit has no token left; it is left READY"
        )
    outcome = attempt(batch[0], WORKER_ID, chain(WORKER_ID))
    _finish(outcome)
    if outcome.error is not None:
        raise outcome.error
    if not Job.objects.on_queue_db().filter(pk=job.pk).exists():
        # SQLQUEUE_RETENTION["SUCCESSFUL"] is 0: the success deleted the job, result and all.
        return _as_stored(outcome.result)
    job.refresh_from_db(fields=["status", "result", "errors"])
    if job.status != JobStatus.SUCCESSFUL:
        # The task returned, but its result could not be stored: the job's error says why.
        raise AssertionError(f"{job.task} returned a result that cannot be stored: {job.errors[-1]['message']}")
    return job.result


def _finish(outcome: JobOutcome) -> Counter[str]:
    """Write ``outcome`` as a worker does (its failure as the runner decided it); the
    outcomes written."""
    if outcome.written is not None:  # committed with the task's writes (runner/completion.py)
        return Counter([outcome.written.transition.outcome])
    succeeded = {outcome.job: outcome.result} if outcome.failure is None else {}
    failed = {} if outcome.failure is None else {outcome.job: outcome.failure}
    return Counter(
        ended.transition.outcome
        for ended in Job.objects.finish_as_decided(worker_id=WORKER_ID, succeeded=succeeded, failed=failed)
    )


def _tally(ran: Ran, written: Counter[str]) -> Ran:
    """``ran`` with the attempts that ended in the ``written`` outcomes (a success the
    retention deleted counts as ``succeeded``)."""
    return ran._replace(**{outcome: getattr(ran, outcome) + count for outcome, count in written.items()})


def _make_due(queues: list[str] | None) -> None:
    """Run now every waiting job of ``queues``, as the admin's Run now does."""
    Job.objects.run_now(Job.objects.on_queue_db().in_queues(queues))


def _task_name(task: AnyTask) -> str:
    # A Django Task is registered by the function it wraps.
    wrapped: Any = getattr(task, "func", task)
    return get_task(wrapped).name


def _as_stored(value: Any) -> Any:
    """``value`` after the JSON round trip a job's arguments make."""
    return None if value is None else json.loads(json.dumps(value))


def _described(task: Any, args: Any, kwargs: Any, queue: Any) -> str:
    given = {"task": None if task is None else _task_name(task), "args": args, "kwargs": kwargs, "queue": queue}
    return ", ".join(f"{name}={value!r}" for name, value in given.items() if value is not None) or "anything"


def _waiting() -> str:
    jobs = list(Job.objects.on_queue_db().filter(status=JobStatus.READY).order_by("pk")[:20])
    return "; ".join(_job_line(job) for job in jobs) or "nothing"


def _job_line(job: Job) -> str:
    return f"#{job.pk} {job.task}(args={job.args!r}, kwargs={job.kwargs!r}) on {job.queue!r}"
