"""The ``@job`` tasks the tests enqueue. As an installed app's ``tasks.py`` they are
registered at import in the test process and found by autodiscovery in the worker
processes the tests start, like any project's tasks."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connection, transaction
from django.db.models import F

from django_sqlqueue import current_job, job
from django_sqlqueue.exceptions import JobCancelled, Snooze
from django_sqlqueue.models import Job
from tests.support.unstorable import max_allowed_packet, refused_json
from tests.testapp import connections
from tests.testapp.models import Receipt

#: What ``leak`` never gives back: it lives as long as the worker process.
_leaked: list[bytes] = []


@job
def noop(*args: object, **kwargs: object) -> None:
    """Does nothing: for tests about the queue, not the task."""


@job
async def async_receipt(token: str) -> dict[str, Any]:
    """A coroutine function: writes the token's receipt through ``sync_to_async`` (on
    the worker thread's connection), and returns its attempt and what it counted."""
    await sync_to_async(Receipt.objects.create)(token=token)
    handle = current_job()
    assert handle is not None
    return {"attempt": handle.attempt, "receipts": await Receipt.objects.filter(token=token).acount()}


@job
def autocommit_left_off(token: str, error: str = "") -> None:
    """Turns autocommit off, writes the token's receipt and returns (or raises ``error``)
    without committing."""
    transaction.set_autocommit(False)
    Receipt.objects.create(token=token)
    if error:
        raise ValueError(error)


@job(unique=("order_id",))
def sync_order(order_id: int, note: str = "") -> None:
    """A unique task: one active job per order."""


@job(unique=("order_id",), unique_until="pruned")
def sync_order_once(order_id: int) -> None:
    """A unique task whose jobs keep their key until they are pruned: once per order."""


@job(unique=True, unique_queue=True)
def sync_everything(region: str, *, full: bool = False) -> None:
    """A unique task keyed by all its arguments and its queue."""


@job(queue="reports", priority=10, max_attempts=2, timeout=5)
def report(name: str) -> str:
    """A task whose decorator sets every default."""
    return name


@job
def add(a: int, b: int) -> int:
    """A task with a result."""
    return a + b


@job(expires_in=600)
def expiring(token: str) -> None:
    """A job no use after ten minutes: records it ran, when it does."""
    Receipt.objects.create(token=token)


@job(tags=("import", "nightly"))
def import_rows(source: str) -> None:
    """A task whose every job is tagged."""


@job(name="testapp.fail")
def fail(message: str) -> None:
    """A task that always raises, registered under a name of its own."""
    raise RuntimeError(message)


@job(queue="mail", priority=5, max_attempts=7, timeout=30)
def send_welcome(user_id: int, *, greeting: str = "Hello") -> None:
    """A task with every option set by its decorator, on a queue of its own."""


@job
def record(token: str, pause: float = 0.0) -> None:
    """Insert the token's receipt; a second run counts itself instead of failing.
    ``pause`` stands in for the work, so that a test has time to kill workers mid-run."""
    time.sleep(pause)
    _count_run(token)


@job
def gather(token: str) -> dict[str, Any]:
    """``record``, returning what the jobs it waited for returned, as it comes."""
    handle = current_job()
    assert handle is not None
    _count_run(token)
    return handle.dependency_results()


@job
def record_then_sleep(token: str, pause: float) -> None:
    """``record``'s side effect first, then ``pause``: a test can freeze its worker once
    the receipt is written, between the side effect and the outcome."""
    _count_run(token)
    time.sleep(pause)


@job
def hold_gil(token: str, seconds: int) -> None:
    """Holds the GIL for ``seconds`` in one C call (libc's ``sleep`` through
    ``ctypes.PyDLL``, which keeps the GIL, unlike ``time.sleep``), as a long ``sum`` or a
    catastrophic regex does, and then writes the token's receipt: every other thread of
    its process, the heartbeat's too, waits meanwhile."""
    ctypes.PyDLL(None).sleep(seconds)
    _count_run(token)


def _count_run(token: str) -> None:
    """Insert the token's receipt, or count one more run in it."""
    with transaction.atomic():
        _, created = Receipt.objects.get_or_create(token=token)
        if not created:
            Receipt.objects.filter(token=token).update(runs=F("runs") + 1)


@job
def sleep(seconds: float) -> float:
    """Takes its time: for timeouts, graceful shutdown and slow-job batching."""
    time.sleep(seconds)
    return seconds


@job
def sleep_once_started(token: str, seconds: float) -> float:
    """Writes the token's receipt, then sleeps: a test can wait for the receipt to know
    the job has started, not merely been claimed (a worker told to stop gives back a
    claimed job it has not started)."""
    Receipt.objects.create(token=token)
    time.sleep(seconds)
    return seconds


@job(max_attempts=2)
def crash() -> None:
    """A poison job: kills its worker process every time it runs."""
    os._exit(3)


@job
def crash_once(token: str) -> None:
    """Kills its worker process the first time it runs, after writing the token's
    receipt; a run after that counts itself on the receipt, as ``record`` does."""
    if Receipt.objects.filter(token=token).exists():
        record(token)
        return
    Receipt.objects.create(token=token)
    os._exit(3)


@job(max_attempts=2)
def exit_cleanly() -> None:
    """Ends its worker process with status 0, as a task calling sys.exit() would."""
    sys.exit(0)


@job(max_attempts=1)
def unstorable() -> Any:
    """Returns what the database refuses to store: on MariaDB more than its
    ``max_allowed_packet``, on PostgreSQL a NUL in a string (SQLite would take both)."""
    if connection.vendor == "mysql":
        return "x" * max_allowed_packet()
    return refused_json()


class Unprintable(Exception):
    """An exception with no words: its ``__str__`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no words for it")


@job(max_attempts=1)
def raise_unprintable() -> None:
    raise Unprintable


@job
def countdown(n: int) -> int:
    """Enqueues itself with ``n - 1`` until 0: jobs that enqueue jobs."""
    return Job.objects.enqueue(countdown, [n - 1]).pk if n > 0 else 0


@job
def sleep_and_say(seconds: float) -> str:
    """Sleeps, then returns its worker's ``SAY`` environment variable: which of several
    hosts (``tests/hosts/``) wrote the outcome."""
    time.sleep(seconds)
    return os.environ.get("SAY", "")


@job
def worker_pid() -> int:
    """The pid of the worker process that ran it: tells which process ran which job."""
    return os.getpid()


@job
def connections_opened() -> int:
    """How many database connections its worker process has opened so far, in all its
    threads (``tests.testapp.connections``)."""
    return connections.opened()


@job
def leak(mib: int) -> int:
    """Keeps ``mib`` MiB for the life of its worker process, as a leaking task would;
    returns the process's pid. The bytes are written, so they are resident."""
    _leaked.append(b"\x01" * (mib * 2**20))
    return os.getpid()


@job
def sleep_first_time(marker: str, seconds: float) -> bool:
    """Sleeps only when the ``marker`` file does not exist yet (creating it): its first
    run is long, a run after an interruption returns at once. Whether it slept."""
    path = Path(marker)
    if path.exists():
        return False
    path.touch()
    time.sleep(seconds)
    return True


@job
def hang_once_exists(marker: str) -> None:
    """Waits until the ``marker`` file exists (another job has started), then hangs
    until its timeout stops it."""
    path = Path(marker)
    while not path.exists():
        time.sleep(0.01)
    time.sleep(3600)


@job
def spawn_sleeper(pid_file: str, seconds: float) -> None:
    """Starts ``sleep 3600`` and leaves it running, writes its pid to ``pid_file``, then
    sleeps ``seconds``: a task whose child would outlive its worker process."""
    child = subprocess.Popen(["sleep", "3600"], stdin=subprocess.DEVNULL)
    Path(pid_file).write_text(str(child.pid))
    time.sleep(seconds)


@job
def whoami() -> dict[str, object]:
    """What ``current_job()`` says of the job that runs it."""
    handle = current_job()
    assert handle is not None
    return {
        "id": handle.id,
        "task": handle.task,
        "queue": handle.queue,
        "attempt": handle.attempt,
        "cancel_requested": handle.cancel_requested,
    }


@job(max_attempts=3)
def cancel_itself() -> None:
    """Stops the way a task asked to cancel stops: it raises ``JobCancelled``."""
    raise JobCancelled("stopping")


@job(max_attempts=3)
def stop_when_cancelled(token: str) -> None:
    """Writes the token's receipt, then checks for a cancel ten times a second, for a minute."""
    Receipt.objects.create(token=token)
    handle = current_job()
    assert handle is not None
    for _ in range(600):
        handle.raise_if_cancelled()
        time.sleep(0.1)


@job(max_attempts=3)
def ignore_cancel(token: str) -> None:
    """Writes the token's receipt, then sleeps a minute whatever anyone asks."""
    Receipt.objects.create(token=token)
    time.sleep(60)


@job(max_attempts=1)
def report_and_wait(token: str) -> None:
    """Reports 3 of 10 done, writes the token's receipt, then waits (a minute at most)
    until someone cancels it."""
    handle = current_job()
    assert handle is not None
    handle.report_progress(3, 10, "three of ten")
    Receipt.objects.create(token=token)
    for _ in range(600):
        handle.raise_if_cancelled()
        time.sleep(0.1)


@job(concurrency=("tenant",), concurrency_limit=2)
def per_tenant(tenant: str, log: str = "", seconds: float = 0.0) -> None:
    """At most two per tenant at once: appends its start and end (wall clock, one line,
    written at once) to ``log``, so that a test can count how many ran together."""
    started = time.time()
    time.sleep(seconds)
    if log:
        with open(log, "a") as file:
            file.write(f"{started} {time.time()}\n")


@job(concurrency_limit=1)
def one_at_a_time() -> None:
    """At most one of these at once, whatever its arguments."""


@job(rate_limit="test-rate")
def paced() -> None:
    """Starts no faster than ``SQLQUEUE_RATE_LIMITS["test-rate"]`` allows."""


@job(max_snoozes=2)
def snooze(delay: float) -> None:
    """Snoozes every time it runs: its third snooze fails its job (``max_snoozes=2``)."""
    raise Snooze(delay)


@job(max_attempts=1)
def snooze_then_fail(snoozes: int) -> None:
    """Snoozes ``snoozes`` times at once, through its handle, then raises."""
    handle = current_job()
    assert handle is not None
    if handle.snoozes < snoozes:
        handle.snooze(0)
    raise ValueError(f"failed after {handle.snoozes} snoozes")


@job(max_attempts=3)
def fail_once(token: str) -> str:
    """Raises on its first run, after writing the token's receipt; returns the token after."""
    if Receipt.objects.filter(token=token).exists():
        return token
    Receipt.objects.create(token=token)
    raise RuntimeError(f"{token}: first run")


@job
def batch_done(token: str, *, batch: dict[str, Any]) -> dict[str, Any]:
    """A batch's callback: ``record``, returning the batch's id and counts it was given."""
    _count_run(token)
    return batch


@job
def fan_out(token: str, children: int) -> None:
    """``record``, after adding ``children`` ``record`` jobs to its own batch."""
    handle = current_job()
    assert handle is not None
    Job.objects.enqueue_many(
        Job.objects.build(record, (f"{token}-{number}",), batch=handle.batch_id) for number in range(children)
    )
    _count_run(token)


@job(max_attempts=2, max_snoozes=1)
def step(mode: str, pause: float = 0.0) -> str:
    """The cross-feature property test's one task (``tests/support/together.py``
    reads what it leaves). It first looks at the jobs it waits for, as they stand while
    it runs, and notes each one not finished (``early:``) or, unless its job runs after
    failures, one that failed or was cancelled, or was deleted without having succeeded
    (``after-bad:``); then it counts its run (``ran:``), and ``mode`` says the rest:
    ``ok`` succeeds (``done:``), ``fail`` raises, ``snooze`` snoozes its first run
    (``snoozed:``) and succeeds after. ``pause`` comes first, so that a test can kill
    its worker mid-run. Every note is a receipt keyed by the job's id."""
    handle = current_job()
    assert handle is not None
    time.sleep(pause)
    parents = [int(parent) for parent in handle.dependency_results()]
    statuses = dict(Job.objects.filter(pk__in=parents).values_list("pk", "status"))
    runs_anyway = Job.objects.filter(pk=handle.id, runs_after_failure=True).exists()
    for parent in parents:
        status = statuses.get(parent)
        if status in ("WAITING", "READY", "RUNNING"):
            _count_run(f"early:{handle.id}:{parent}")
        elif not runs_anyway and (
            status in ("FAILED", "CANCELLED")
            or (status is None and not Receipt.objects.filter(token=f"done:{parent}").exists())
        ):
            _count_run(f"after-bad:{handle.id}:{parent}")
    _count_run(f"ran:{handle.id}")
    if mode == "fail":
        raise RuntimeError(f"step {handle.id} fails, as asked")
    if mode == "snooze" and handle.snoozes == 0:
        _count_run(f"snoozed:{handle.id}")
        raise Snooze(0.2)
    _count_run(f"done:{handle.id}")
    return mode


@job(atomic=True)
def step_atomically(mode: str, pause: float = 0.0) -> str:
    """:func:`step` with its notes committed with its success (``@job(atomic=True)``):
    a run that fails, snoozes or is killed leaves none."""
    return step(mode, pause)  # @job returns the function itself: this calls it


def _insert_receipt(token: str, pause: float, die_once: str) -> None:
    """Insert the token's receipt (a second run counts itself on it), then ``pause``;
    with ``die_once`` (a marker file's path), kill the worker process the first time,
    after the insert and before the job's outcome: the receipt of a job that runs again."""
    _count_run(token)
    time.sleep(pause)
    if die_once and not os.path.exists(die_once):
        Path(die_once).touch()
        os.kill(os.getpid(), signal.SIGKILL)


@job(max_attempts=50)
def insert_receipt(token: str, pause: float = 0.0, die_once: str = "") -> None:
    """:func:`_insert_receipt` outside any transaction of the job's: at least once."""
    _insert_receipt(token, pause, die_once)


@job(atomic=True, max_attempts=50)
def insert_receipt_atomically(token: str, pause: float = 0.0, die_once: str = "") -> None:
    """:func:`_insert_receipt` committed with the job's success: exactly once."""
    _insert_receipt(token, pause, die_once)


@job(atomic=True, max_attempts=1)
def record_atomically_then_fail(token: str, message: str) -> None:
    """Insert the token's receipt, then raise: the receipt is rolled back."""
    _count_run(token)
    raise ValueError(message)


@job(atomic=True)
def record_atomically(token: str, result: Any = None) -> Any:
    """Insert the token's receipt, committed with the success; return ``result``."""
    _count_run(token)
    return result


@job(max_attempts=1)
def record_and_complete(token: str, then: str = "") -> str:
    """Insert the token's receipt and complete the job inside one ``atomic()`` of the
    task's own; ``then="raise"`` raises after that commit, ``"rollback"`` rolls both back
    (and the worker writes the outcome), ``"twice"`` completes again."""
    handle = current_job()
    assert handle is not None
    try:
        with transaction.atomic():
            _count_run(token)
            handle.complete_in_transaction(result={"token": token})
            if then == "twice":
                handle.complete_in_transaction()
            if then == "rollback":
                raise LookupError("rolled back")
    except LookupError:
        return "rolled back"
    if then == "raise":
        raise RuntimeError("after the commit")
    return "returned"


@job(max_attempts=1)
def complete_outside_transaction() -> None:
    """Completes its job with autocommit on: refused, as the success would commit alone."""
    handle = current_job()
    assert handle is not None
    handle.complete_in_transaction()


@job(atomic="replica")
def atomic_on_replica(token: str) -> None:
    """Says it writes to another database than the jobs': refused at enqueue."""


@job(atomic=True, max_attempts=1)
def record_atomically_unstorable(token: str) -> float:
    """Insert the token's receipt, then return what no JSON column stores: rolled back."""
    _count_run(token)
    return float("nan")


@job(max_attempts=5)
def deliver(token: str) -> None:
    """Insert the token's receipt, in a transaction of its own (an effect that is at least
    once), between due-work-harness's two death points (:func:`_killed_at`)."""
    _killed_at("before the effect")
    _count_run(token)
    _killed_at("after the effect")


@job(atomic=True, max_attempts=5)
def deliver_atomically(token: str) -> None:
    """:func:`deliver` with the receipt committed with the job's success: exactly once."""
    _killed_at("before the effect")
    _count_run(token)
    _killed_at("after the effect")


def _killed_at(point: str) -> None:
    """FAULT INJECTION: when due-work-harness's process history asked to die at ``point``
    (its environment says so, once: a marker file), SIGKILL the whole ``runworkers``:
    its supervisor, which leads the session, then this worker process."""
    from due_work_harness.process_histories import fault_fires  # only a process history sets a fault

    if fault_fires(point):
        os.kill(os.getsid(0), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
