"""``manage.py runworkers`` refusing what it is given before it starts any process
(its runs are in ``tests/integration/management/commands/test_runworkers.py``)."""

from __future__ import annotations

import re
import socket
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DEFAULT_DB_ALIAS, connection, connections

from django_sqlqueue.db.engines import engine
from django_sqlqueue.management.commands import runworkers
from django_sqlqueue.models import Worker
from django_sqlqueue.runner.naming import longest_prefix
from tests.support.charsets import session_variable


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--processes", "0"], "argument --processes: 0 is less than 1"),
        (["--processes", "two"], "argument --processes: 'two' is not a whole number"),
        (["--threads", "-1"], "argument --threads: -1 is less than 1"),
        (["--batch-size", "0"], "argument --batch-size: 0 is less than 1"),
        (["--batch-size", "100001"], "argument --batch-size: 100001 is more than 100000, the most one claim takes"),
        (["--max-jobs", "1.5"], "argument --max-jobs: '1.5' is not a whole number"),
        (["--max-jobs-per-process", "0"], "argument --max-jobs-per-process: 0 is less than 1"),
        (["--max-memory", "200MB"], "argument --max-memory: '200MB' is not a whole number"),
        (["--queues", "mail,,reports"], "argument --queues: a queue name must be a non-empty string, not ''"),
        (["--queues", "q" * 101], "longer than 100 characters"),
        (["--metrics-port", "0"], "argument --metrics-port: 0 is less than 1"),
        (["--metrics-port", "65536"], "argument --metrics-port: 65536 is more than 65535, the highest port"),
        (["--log-format", "xml"], "argument --log-format: invalid choice: 'xml'"),
    ],
)
def test_bad_options_are_refused_before_anything_starts(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=re.escape(message)):
        call_command("runworkers", *args)


@pytest.mark.django_db
def test_queue_outside_sqlqueue_queues_is_refused(settings: Any) -> None:
    settings.SQLQUEUE_QUEUES = ["default", "mail"]
    with pytest.raises(CommandError, match=re.escape("--queues: queue 'reports' is not one of SQLQUEUE_QUEUES")):
        call_command("runworkers", "--queues", "mail,reports")
    assert not Worker.objects.exists()


@pytest.mark.django_db
def test_metrics_without_prometheus_client_say_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runworkers, "client_installed", lambda: False)
    with pytest.raises(
        CommandError,
        match=re.escape(
            '--metrics-port needs prometheus-client: install prometheus-client: pip install "django-sqlqueue[metrics]".'
        ),
    ):
        call_command("runworkers", "--metrics-port", "9100")
    assert not Worker.objects.exists()


@pytest.mark.django_db
def test_a_metrics_port_in_use_is_refused_before_any_process_starts() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        with pytest.raises(
            CommandError, match=re.escape(f"--metrics-port cannot serve on 127.0.0.1:{port}: Address already in use.")
        ):
            call_command("runworkers", "--metrics-port", str(port))
    assert not Worker.objects.exists()


@pytest.mark.django_db
def test_a_name_prefix_too_long_for_the_worker_names_is_refused_before_anything_starts() -> None:
    # Before: the names did not fit their columns, and the run failed later or never ended.
    too_long = "p" * (longest_prefix() + 1)
    with pytest.raises(CommandError, match=re.escape(f"argument --name: {len(too_long)} characters is too long")):
        call_command("runworkers", "--burst", "--processes", "1", "--name", too_long, stdout=StringIO())
    assert not Worker.objects.exists()


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no connection limit")
@pytest.mark.django_db
def test_more_processes_than_the_server_takes_are_refused_before_anything_starts() -> None:
    # Before: each process started, and those past the server's limit failed to connect, again and again.
    server = engine(connections[DEFAULT_DB_ALIAS]).server_connections()
    assert server is not None
    processes = server.limit  # three connections each at least
    with pytest.raises(CommandError, match=re.escape(f"--processes {processes} x --threads 1 needs up to")):
        call_command("runworkers", "--burst", "--processes", str(processes), stdout=StringIO())
    assert not Worker.objects.exists()


@pytest.mark.skipif(connection.vendor == "sqlite", reason="SQLite has no connection limit")
@pytest.mark.django_db
def test_the_connections_counted_are_those_of_the_threads_left_after_the_batch_size_lowers_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Before: --threads as asked was counted, so a run its batches of 1 keep to a thread
    # a process (4 connections at most) was refused for the hundreds it would never open.
    started: list[Any] = []

    class Started:
        """Stands for the supervisor: what runworkers would start, without starting it."""

        def __init__(self, options: Any, **kwargs: Any) -> None:
            started.append(options)

        def run(self) -> int:
            return 0

    monkeypatch.setattr(runworkers, "Supervisor", Started)
    server = engine(connections[DEFAULT_DB_ALIAS]).server_connections()
    assert server is not None
    err = StringIO()
    args = ("--burst", "--processes", "1", "--threads", str(server.limit), "--batch-size", "1")
    call_command("runworkers", *args, stdout=StringIO(), stderr=err)
    assert f"--threads {server.limit} is more than the batch size (1)" in err.getvalue()
    assert [(options.processes, options.threads) for options in started] == [(1, 1)]


@pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB connections have character sets")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--queues", "mail,🙂"], "--queues: queue '🙂' holds '🙂' (U+1F642), which the character set utf8mb3"),
        (["--name", "🙂-"], "--name: worker '🙂-' holds '🙂' (U+1F642), which the character set utf8mb3"),
    ],
)
def test_a_name_the_connection_cannot_carry_is_refused_before_anything_starts(
    monkeypatch: pytest.MonkeyPatch, args: list[str], message: str
) -> None:
    # Before: every worker died at start-up on a raw OperationalError 1267 ("Illegal mix of collations").
    monkeypatch.setattr(runworkers, "Supervisor", lambda *args, **kwargs: pytest.fail("the supervisor started"))
    with session_variable("character_set_client", "utf8mb3"), pytest.raises(CommandError, match=re.escape(message)):
        call_command("runworkers", "--burst", *args, stdout=StringIO())
    assert not Worker.objects.exists()
