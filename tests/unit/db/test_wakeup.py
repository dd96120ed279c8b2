"""The local wake-up's sockets (``db/wakeup.py``): where they live, what an enqueue's
commit sends, and that nothing it meets on the way raises. The waiting worker is in
``tests/unit/runner/test_wakeup.py``, its socket in ``test_wakeup_socket.py``; a real idle ``runworkers`` in
``tests/integration/runner/test_wakeup.py``."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from django.db import Error, connection, transaction

from django_sqlqueue.conf import conf
from django_sqlqueue.db import wakeup, wakeup_socket
from django_sqlqueue.db.engines.errors import is_unavailable
from django_sqlqueue.models import Job
from tests.support.severed import needs_a_server, sever
from tests.support.wakeups import no_notify, received
from tests.testapp.tasks import noop


@no_notify
@pytest.mark.django_db(transaction=True)
def test_a_commit_sends_one_datagram_naming_its_queues_however_many_jobs(sock: socket.socket) -> None:
    with transaction.atomic():
        Job.objects.enqueue(noop, queue="mail")
        Job.objects.enqueue_many([Job.objects.build(noop, queue="reports") for _ in range(3)])
        Job.objects.enqueue_rows([(noop, (), None)], queue="mail")
        assert received(sock) == [], "woken before the jobs were committed"
    assert received(sock) == [b"mail\nreports"]


@no_notify
@pytest.mark.django_db(transaction=True)
def test_a_rolled_back_enqueue_sends_nothing_and_the_next_commit_still_does(sock: socket.socket) -> None:
    with transaction.atomic():
        Job.objects.enqueue(noop, queue="lost")
        transaction.set_rollback(True)
    assert received(sock) == []
    with transaction.atomic():
        with transaction.atomic():  # a savepoint, rolled back
            Job.objects.enqueue(noop, queue="lost")
            transaction.set_rollback(True)
        Job.objects.enqueue(noop, queue="kept")
    assert received(sock) == [b"kept"]
    Job.objects.enqueue(noop)  # autocommit: at once
    assert received(sock) == [conf.SQLQUEUE_DEFAULT_QUEUE.encode()]


@no_notify
@pytest.mark.django_db(transaction=True)
def test_every_worker_socket_of_the_database_is_woken(folder: Path) -> None:
    sockets = [wakeup_socket.bind("default") for _ in range(3)]
    try:
        Job.objects.enqueue(noop, queue="mail")
        assert [received(sock) for sock in sockets if sock is not None] == [[b"mail"]] * 3
    finally:
        for sock in sockets:
            if sock is not None:
                wakeup_socket.unbind(sock)


@no_notify
def test_sending_without_a_listener_does_not_raise(
    folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(wakeup, "_said", set())
    assert not folder.exists()
    assert wakeup.send("default", ["mail"]) == 0
    assert caplog.text == ""  # no worker has made the folder yet: nothing to say
    folder.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    stale.bind(str(folder / "1-dead.sock"))
    stale.close()  # the file stays, as a worker killed by SIGKILL leaves it
    assert wakeup.send("default", ["mail"]) == 0


@no_notify
def test_sending_to_a_folder_others_may_enter_sends_nothing_and_says_so_once(
    sock: socket.socket, folder: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(wakeup, "_said", set())
    folder.chmod(0o755)
    assert wakeup.send("default", ["mail"]) == 0
    assert wakeup.send("default", ["mail"]) == 0
    assert received(sock) == []
    assert caplog.text.count("No wake-up sent for database 'default'") == 1, caplog.text
    with pytest.raises(wakeup.UnsafeFolder):
        wakeup_socket.bind("default")


@no_notify
def test_a_full_socket_buffer_does_not_raise(sock: socket.socket) -> None:
    while wakeup.send("default", ["x" * 1000]):
        pass  # until the idle worker's buffer is full
    assert wakeup.send("default", ["mail"]) == 0


@no_notify
def test_each_database_has_a_folder_of_its_own(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connection.settings_dict, "NAME", f"{connection.settings_dict['NAME']}-other")
    assert wakeup.wakeup_folder("default") not in (None, folder)


@no_notify
def test_the_wakeup_can_be_turned_off(settings: Any) -> None:
    settings.SQLQUEUE_WAKEUP_DIR = False
    assert wakeup.wakeup_folder("default") is None
    assert wakeup_socket.bind("default") is None


@pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's")
def test_postgresql_keeps_listen_notify() -> None:
    assert wakeup.wakeup_folder("default") is None
    assert wakeup_socket.bind("default") is None


@no_notify
@needs_a_server
@pytest.mark.django_db(transaction=True)
def test_a_dropped_connection_sends_no_wake_up_for_what_it_lost_and_needs_none_to_send_one(
    sock: socket.socket,
) -> None:
    """Dropped before the commit: the enqueue raises, nothing was written, nothing is
    sent, and the next transaction's wake-up is its own. Dropped once the commit is done
    (by a callback that runs before the wake-up's): the datagram needs no connection, and
    goes."""
    with pytest.raises(Error) as excinfo:
        enqueue_then_sever("lost")
    assert is_unavailable(excinfo.value)
    assert received(sock) == []
    connection.close()  # as close_old_connections() does at the end of a request
    assert not Job.objects.exists()
    with transaction.atomic():
        transaction.on_commit(sever)
        Job.objects.enqueue(noop, queue="kept")
    assert received(sock) == [b"kept"]
    connection.close()
    assert list(Job.objects.values_list("queue", flat=True)) == ["kept"]


def enqueue_then_sever(queue: str) -> None:
    """Enqueue in a transaction whose connection the server ends before it commits."""
    with transaction.atomic():
        Job.objects.enqueue(noop, queue=queue)
        sever()
