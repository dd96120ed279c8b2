"""The local wake-up's sockets (``db/wakeup.py``): where they live, what an enqueue's
commit sends, and that nothing it meets on the way raises. The waiting worker is in
``tests/unit/runner/test_wakeup.py``; a real idle ``runworkers`` in
``tests/integration/runner/test_wakeup.py``."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, transaction

from django_sqlqueue.conf import conf
from django_sqlqueue.db import wakeup
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop

#: The databases without NOTIFY: their workers wait on a socket.
no_notify = pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL's workers LISTEN")


@pytest.fixture
def folder(settings: Any, tmp_path: Path) -> Path:
    """This test's own wake-up base folder; the database's folder in it."""
    base = tmp_path / "run"
    base.mkdir(mode=0o700)
    settings.SQLQUEUE_WAKEUP_DIR = str(base)
    made = wakeup.wakeup_folder("default")
    assert made is not None
    return made


@pytest.fixture
def bell(folder: Path) -> Iterator[socket.socket]:
    made = wakeup.bind("default")
    assert made is not None
    yield made
    wakeup.unbind(made)


def received(bell: socket.socket) -> list[bytes]:
    datagrams = []
    try:
        while True:
            datagrams.append(bell.recv(4096))
    except BlockingIOError:
        return datagrams


@no_notify
@pytest.mark.django_db(transaction=True)
def test_a_commit_sends_one_datagram_naming_its_queues_however_many_jobs(bell: socket.socket) -> None:
    with transaction.atomic():
        Job.objects.enqueue(noop, queue="mail")
        Job.objects.enqueue_many([Job.objects.build(noop, queue="reports") for _ in range(3)])
        Job.objects.enqueue_rows([(noop, (), None)], queue="mail")
        assert received(bell) == [], "woken before the jobs were committed"
    assert received(bell) == [b"mail\nreports"]


@no_notify
@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_enqueue_sends_nothing_and_the_next_commit_still_does(bell: socket.socket) -> None:
    with transaction.atomic():
        Job.objects.enqueue(noop, queue="lost")
        transaction.set_rollback(True)
    assert received(bell) == []
    with transaction.atomic():
        with transaction.atomic():  # a savepoint, rolled back
            Job.objects.enqueue(noop, queue="lost")
            transaction.set_rollback(True)
        Job.objects.enqueue(noop, queue="kept")
    assert received(bell) == [b"kept"]
    Job.objects.enqueue(noop)  # autocommit: at once
    assert received(bell) == [conf.SQLQUEUE_DEFAULT_QUEUE.encode()]


@no_notify
@pytest.mark.django_db(transaction=True)
def test_every_worker_socket_of_the_database_is_woken(folder: Path) -> None:
    bells = [wakeup.bind("default") for _ in range(3)]
    try:
        Job.objects.enqueue(noop, queue="mail")
        assert [received(bell) for bell in bells if bell is not None] == [[b"mail"]] * 3
    finally:
        for bell in bells:
            if bell is not None:
                wakeup.unbind(bell)


@no_notify
def test_sending_without_a_listener_does_not_raise(folder: Path) -> None:
    assert not folder.exists()
    assert wakeup.send("default", ["mail"]) == 0
    folder.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(folder / "1-dead.sock"))
    stale.close()  # the file stays, as a worker killed by SIGKILL leaves it
    assert wakeup.send("default", ["mail"]) == 0


@no_notify
def test_sending_to_a_folder_others_may_enter_sends_nothing(bell: socket.socket, folder: Path) -> None:
    folder.chmod(0o755)
    assert wakeup.send("default", ["mail"]) == 0
    assert received(bell) == []
    with pytest.raises(wakeup.UnsafeFolder):
        wakeup.bind("default")


@no_notify
def test_a_full_socket_buffer_does_not_raise(bell: socket.socket) -> None:
    while wakeup.send("default", ["x" * 1000]):
        pass  # until the idle worker's buffer is full
    assert wakeup.send("default", ["mail"]) == 0


@no_notify
def test_a_stale_socket_is_replaced_at_the_next_start(folder: Path) -> None:
    dead = wakeup.bind("default")
    assert dead is not None
    dead_path = dead.getsockname()
    dead.close()  # killed: its file is left behind
    assert os.path.exists(dead_path)
    bell = wakeup.bind("default")
    assert bell is not None
    try:
        assert not os.path.exists(dead_path)
        assert os.listdir(folder) == [os.path.basename(bell.getsockname())]
        assert oct(os.stat(bell.getsockname()).st_mode & 0o777) == oct(0o600)
        assert oct(os.stat(folder).st_mode & 0o777) == oct(0o700)
    finally:
        wakeup.unbind(bell)


@no_notify
def test_each_database_has_a_folder_of_its_own(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "NAME", f"{connection.settings_dict['NAME']}-other")
    assert wakeup.wakeup_folder("default") not in (None, folder)


@no_notify
def test_the_wakeup_can_be_turned_off(settings: Any) -> None:
    settings.SQLQUEUE_WAKEUP_DIR = False
    assert wakeup.wakeup_folder("default") is None
    assert wakeup.bind("default") is None


@pytest.mark.parametrize(
    ("payload", "queues", "woken"),
    [
        (b"mail", None, True),
        (b"mail\nreports", ["reports"], True),
        (b"mail", ["reports"], False),
        (b"", ["reports"], True),  # too many queues to name: everyone
    ],
)
def test_a_worker_wakes_for_its_own_queues(payload: bytes, queues: list[str] | None, woken: bool) -> None:
    assert wakeup.wakes(payload, queues) is woken


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's")
def test_postgresql_keeps_listen_notify() -> None:
    assert wakeup.wakeup_folder("default") is None
    assert wakeup.bind("default") is None
