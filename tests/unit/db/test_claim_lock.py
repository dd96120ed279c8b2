"""The host's claim lock (``db/claim_lock.py``): one holder at a time, a dead holder's
lock free at once, a live holder that does not let go waited for a bounded time, and
no lock (and no error) where there is no folder; MySQL/MariaDB's claims take it."""

from __future__ import annotations

import errno
import itertools
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections

from django_sqlqueue.db import claim_lock, wakeup
from django_sqlqueue.db.claim_lock import FILE_NAME, HostClaimLock
from django_sqlqueue.models import Job
from tests.support.wakeups import no_notify
from tests.testapp.tasks import noop

pytestmark = no_notify


def _lock() -> HostClaimLock:
    """A lock of its own, as another thread's connection has (a ``flock`` belongs to an open file)."""
    return HostClaimLock(Job, connection)


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(claim_lock, "MOST_WAIT", 0.05)


@pytest.mark.django_db
def test_a_lock_held_keeps_the_next_claimer_waiting_until_it_is_let_go(folder: Path) -> None:
    first, second = _lock(), _lock()
    order: list[str] = []

    def claim_second() -> None:
        with second.locked() as had:
            order.append(f"second {had}")

    with first.locked() as had:
        assert had
        waiting = threading.Thread(target=claim_second)
        waiting.start()
        time.sleep(0.05)
        order.append("first lets go")
    waiting.join(5)
    assert order == ["first lets go", "second True"]
    assert (folder / FILE_NAME).stat().st_mode & 0o777 == 0o600


@pytest.mark.django_db
def test_a_holder_that_does_not_let_go_is_waited_for_a_bounded_time(folder: Path, quick: None) -> None:
    with _lock().locked():
        started = time.monotonic()
        with _lock().locked() as had:
            waited = time.monotonic() - started
    assert not had
    assert 0.05 <= waited < 1


@pytest.mark.django_db
def test_a_wait_in_vain_while_the_lock_passes_between_others_leaves_the_next_claim_waiting(
    folder: Path, quick: None
) -> None:
    waiting, others = _lock(), [_lock(), _lock()]
    stop = threading.Event()

    def pass_the_lock() -> None:
        for number in itertools.count():
            if stop.is_set():
                return
            with others[number % 2].locked():
                time.sleep(0.005)

    passing = threading.Thread(target=pass_the_lock)
    passing.start()
    try:
        time.sleep(0.01)
        with waiting.locked() as had:
            pass
    finally:
        stop.set()
        passing.join(5)
    assert waiting._alone_until == 0.0, f"had it: {had}"
    with waiting.locked() as had:
        assert had


@pytest.mark.django_db
def test_after_a_wait_in_vain_on_a_stuck_holder_the_claimer_goes_without_the_lock_for_a_while(
    folder: Path, quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = _lock()
    with _lock().locked():
        with waiting.locked() as had:
            assert not had
        started = time.monotonic()
        with waiting.locked() as had:
            assert not had
        assert time.monotonic() - started < 0.05  # no second wait
    assert waiting._alone_until > time.monotonic()
    monkeypatch.setattr(waiting, "_alone_until", 0.0)  # ALONE_AFTER gone by
    with waiting.locked() as had:
        assert had


@pytest.mark.django_db
def test_a_killed_holders_lock_is_free_at_once(folder: Path, quick: None) -> None:
    assert wakeup.make_folder("default") == folder
    with subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time\n"
            "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)\n"
            "fcntl.flock(fd, fcntl.LOCK_EX)\n"
            "print('held', flush=True)\n"
            "time.sleep(60)\n",
            str(folder / FILE_NAME),
        ],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == "held\n"
            with _lock().locked() as had:
                assert not had
        finally:
            holder.kill()
    with _lock().locked() as had:
        assert had


@pytest.mark.django_db
def test_without_a_folder_claims_take_no_lock(settings: Any) -> None:
    settings.SQLQUEUE_WAKEUP_DIR = False
    with _lock().locked() as had:
        assert not had


@pytest.mark.django_db
def test_a_folder_that_cannot_be_made_gives_no_lock_and_no_error(settings: Any, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    settings.SQLQUEUE_WAKEUP_DIR = str(tmp_path / "file" / "run")
    with _lock().locked() as had:
        assert not had


@pytest.mark.django_db
def test_a_forked_child_opens_the_file_again(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = _lock()
    with lock.locked():
        pass
    inherited = lock._closing
    assert inherited is not None
    monkeypatch.setattr(os, "getpid", lambda: -1)
    with lock.locked() as had:
        assert had
    assert not inherited.alive  # closed in the child
    assert lock._closing is not None
    assert lock._closing.alive


@pytest.fixture
def locks_taken(monkeypatch: pytest.MonkeyPatch) -> list[bool | None]:
    taken: list[bool | None] = []
    take = claim_lock._take

    def counted(descriptor: int) -> bool | None:
        taken.append(had := take(descriptor))
        return had

    monkeypatch.setattr(claim_lock, "_take", counted)
    return taken


@pytest.mark.django_db(transaction=True)
def test_mysql_claims_take_the_lock_and_others_do_not(folder: Path, locks_taken: list[bool | None]) -> None:
    Job.objects.enqueue(noop)
    assert len(Job.objects.claim(worker_id="w", limit=5)) == 1
    assert locks_taken == ([True] if connection.vendor == "mysql" else [])


@pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL/MariaDB's claims take turns")
@pytest.mark.django_db(transaction=True)
def test_a_claim_goes_ahead_without_the_lock_when_the_holder_does_not_let_go(folder: Path, quick: None) -> None:
    Job.objects.enqueue(noop)
    held = HostClaimLock(Job, connections["default"])
    with held.locked() as had:
        assert had
        claimed = Job.objects.claim(worker_id="w", limit=5)
    assert len(claimed) == 1


@pytest.fixture
def unsaid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing said yet in this process about the wake-up folder."""
    monkeypatch.setattr(wakeup, "_said", set())


def _failing(number: int) -> Any:
    def fail(*args: Any) -> Any:
        raise OSError(number, os.strerror(number))

    return fail


@pytest.mark.django_db
def test_a_full_disk_gives_no_lock_lets_the_lock_go_and_says_so_once(
    folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, unsaid: None
) -> None:
    monkeypatch.setattr(os, "pwrite", _failing(errno.ENOSPC))
    first, second = _lock(), _lock()
    for lock in (first, second, first):
        with lock.locked() as had:
            assert not had
    assert caplog.text.count("Claims take no turns") == 1, caplog.text
    assert "No space left on device" in caplog.text
    monkeypatch.undo()
    with second.locked() as had:  # the lock was let go each time
        assert had


@pytest.mark.parametrize("number", [errno.EROFS, errno.EACCES, errno.ENOENT], ids=["read-only", "denied", "vanished"])
@pytest.mark.django_db
def test_a_lock_file_that_cannot_be_opened_gives_no_lock_and_says_so_once(
    number: int, folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, unsaid: None
) -> None:
    monkeypatch.setattr(os, "open", _failing(number))
    for _ in range(2):
        with _lock().locked() as had:
            assert not had
    assert caplog.text.count("take no turns") == 1, caplog.text


@pytest.mark.skipif(connection.vendor != "mysql", reason="MySQL/MariaDB's claims take turns")
@pytest.mark.django_db(transaction=True)
def test_a_claim_on_a_full_disk_goes_ahead_without_the_lock(
    folder: Path, monkeypatch: pytest.MonkeyPatch, unsaid: None
) -> None:
    Job.objects.enqueue_many(Job.objects.build(noop) for _ in range(2))
    monkeypatch.setattr(os, "pwrite", _failing(errno.ENOSPC))
    assert len(Job.objects.claim(worker_id="w", limit=1)) == 1
    assert len(Job.objects.claim(worker_id="w", limit=1)) == 1
