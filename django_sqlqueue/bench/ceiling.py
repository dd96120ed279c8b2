"""The ceilings: the benchmark's work done in raw SQL through the driver, no Django, no
Python per job beyond building the statement; on the jobs table with its columns and
indexes, and on a minimal queue table made for the run (the physical ceiling).

Here are the processes and the timing; the statements, and how each database takes
them, are ``bench/raw``'s."""

from __future__ import annotations

import functools
import multiprocessing
import queue as queue_module
import time
from typing import Any, NamedTuple

from django_sqlqueue.bench.raw import RawDatabase
from django_sqlqueue.db.transient import retried
from django_sqlqueue.runner.spawning import main_module_hidden

INSERT_BATCH = 1000


def insert_one_per_transaction(database: RawDatabase, queue: str, count: int) -> float:
    """Jobs per second inserted one INSERT + COMMIT at a time."""
    with database.connect() as connection:
        cursor = connection.cursor()
        sql = database.insert_sql(1)
        began = time.perf_counter()
        for _ in range(count):
            database.begin(connection)
            cursor.execute(sql, (queue,))
            database.commit(connection)
        return count / (time.perf_counter() - began)


def insert_many_per_statement(database: RawDatabase, queue: str, count: int) -> float:
    """Jobs per second inserted in multi-row INSERTs of ``INSERT_BATCH`` rows, one transaction."""
    with database.connect() as connection:
        cursor = connection.cursor()
        began = time.perf_counter()
        database.begin(connection)
        for start in range(0, count, INSERT_BATCH):
            database.insert(cursor, queue, min(INSERT_BATCH, count - start))
        database.commit(connection)
        return count / (time.perf_counter() - began)


class Drained(NamedTuple):
    """What a raw drain did: jobs per second, and the candidates its claims lost to
    another claimer for each job claimed (only a claim that reads before it locks loses any)."""

    per_second: float
    lost_per_job: float


def drain(database: RawDatabase, queue: str, count: int, processes: int, batch_size: int) -> Drained:
    """Jobs per second claimed in batches with SKIP LOCKED (SQLite: a write-locked
    ``UPDATE … RETURNING``) and marked done, by ``processes`` processes at once."""
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    workers = [
        context.Process(target=_drain_process, args=(database, queue, batch_size, f"raw-{n}", start, results))
        for n in range(processes)
    ]
    with main_module_hidden():  # a manage.py without a main guard would run again in each
        for process in workers:
            process.start()
    try:
        _replies(results, workers, timeout=60)
        start.set()
        spans = _replies(results, workers, timeout=600)
    except BaseException:
        for process in workers:
            process.terminate()
        raise
    finally:
        for process in workers:
            process.join()
    drained = sum(done for done, _, _, _ in spans)
    if drained != count:
        raise RuntimeError(f"the raw drain took {drained} jobs, not {count}")
    took = max(end for _, _, _, end in spans) - min(begin for _, _, begin, _ in spans)
    return Drained(count / took, sum(lost for _, lost, _, _ in spans) / count)


def _replies(results: Any, workers: list[Any], *, timeout: float) -> list[Any]:
    """One message from each process, or an error as soon as one of them dies (its
    traceback is on stderr) or when ``timeout`` seconds pass: never a silent wait."""
    replies: list[Any] = []
    deadline = time.monotonic() + timeout
    while len(replies) < len(workers):
        try:
            replies.append(results.get(timeout=0.2))
        except queue_module.Empty:
            failed = [process.exitcode for process in workers if process.exitcode]
            if failed:
                raise RuntimeError(f"a raw drain process exited with status {failed[0]}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"the raw drain's processes did not answer within {timeout:.0f} s") from None
    return replies


def _drain_process(database: RawDatabase, queue: str, batch_size: int, name: str, start: Any, results: Any) -> None:
    with database.connect() as connection:
        claim, finish = database.claim_and_finish(connection, queue, batch_size, name)
        results.put("ready")
        start.wait()
        began = time.time()
        done = lost = 0
        # A deadlock or lock wait timeout is run again, as the app's claims and finishes are
        # (MariaDB's locking claims deadlock now and then): no other error is.
        while True:
            ids, missed = retried(claim, Exception, undo=connection.rollback)
            lost += missed
            if not ids:
                break
            retried(functools.partial(finish, ids), Exception, undo=connection.rollback)
            done += len(ids)
        results.put((done, lost, began, time.time()))
