"""Pausing and resuming queues (``db/pausing.py``), and how a claim leaves paused queues out."""

from __future__ import annotations

import re
import time

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext

from django_sqlqueue import pause_queue, resume_queue
from django_sqlqueue.db.pausing import REFRESH_SECONDS, PausedQueues, paused_queues
from django_sqlqueue.models import Job, JobStatus, PausedQueue
from tests.support.charsets import column_in, session_variable
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def test_pause_is_idempotent_and_keeps_the_first_reason() -> None:
    assert pause_queue("mail", "provider down") is True
    assert pause_queue("mail", "again") is False
    [paused] = PausedQueue.objects.all()
    assert (paused.queue, paused.reason, paused.paused_at is not None) == ("mail", "provider down", True)
    assert list(paused_queues()) == ["mail"]


def test_resume_is_idempotent() -> None:
    pause_queue("mail")
    assert resume_queue("mail") is True
    assert resume_queue("mail") is False
    assert paused_queues() == {}


@pytest.mark.parametrize("name", ["", "q" * 101, None])
def test_a_bad_queue_name_is_refused(name: object) -> None:
    with pytest.raises(ValueError, match="queue name"):
        pause_queue(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="queue name"):
        resume_queue(name)  # type: ignore[arg-type]


@override_settings(SQLQUEUE_QUEUES=["default", "mail"])
def test_a_queue_settings_do_not_allow_is_refused() -> None:
    with pytest.raises(ValueError, match="'mial' is not one of SQLQUEUE_QUEUES"):
        pause_queue("mial")
    assert pause_queue("mail") is True


def test_enqueueing_on_a_paused_queue_still_works() -> None:
    pause_queue("default")
    job = Job.objects.enqueue(noop)
    assert Job.objects.get(pk=job.pk).status == JobStatus.READY


def test_a_claim_skips_the_paused_queues() -> None:
    default = Job.objects.enqueue(noop)
    mail = Job.objects.enqueue(noop, queue="mail")
    claimed = Job.objects.claim(worker_id="w", skip_queues=frozenset({"default"}))
    assert [job.pk for job in claimed] == [mail.pk]
    assert Job.objects.get(pk=default.pk).status == JobStatus.READY


def test_a_claim_on_named_queues_skips_the_paused_ones() -> None:
    Job.objects.enqueue(noop)
    mail = Job.objects.enqueue(noop, queue="mail")
    assert list(Job.objects.claim(worker_id="w", queues=["default"], skip_queues={"default"})) == []
    claimed = Job.objects.claim(worker_id="w", queues=["default", "mail"], skip_queues={"default"})
    assert [job.pk for job in claimed] == [mail.pk]


def claim_statement(**options: object) -> str:
    """The claim's first statement, the one that picks the candidates (the later ones
    name the claimed ids)."""
    Job.objects.enqueue(noop)
    with CaptureQueriesContext(connection) as queries:
        Job.objects.claim(worker_id="w", **options)  # type: ignore[arg-type]
    Job.objects.all().delete()
    return next(query["sql"] for query in queries.captured_queries if "SAVEPOINT" not in query["sql"])


def test_with_nothing_paused_the_claim_is_the_same_statement() -> None:
    assert claim_statement(skip_queues=frozenset()) == claim_statement()
    assert claim_statement(queues=["default"], skip_queues=frozenset()) == claim_statement(queues=["default"])


def test_a_worker_reads_the_paused_queues_at_most_once_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    paused = PausedQueues()
    with CaptureQueriesContext(connection) as queries:
        assert paused.current() == frozenset()
        pause_queue("mail")
        before = len(queries)
        clock[0] += REFRESH_SECONDS / 2
        assert paused.current() == frozenset()  # not read again yet
        assert len(queries) == before
        clock[0] += REFRESH_SECONDS / 2
        assert paused.current() == {"mail"}
        resume_queue("mail")
        assert paused.current(changed=True) == frozenset()  # a NOTIFY said so: read at once


mysql_only = pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB tables have character sets")


@mysql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "not-strict"])
def test_a_reason_outside_the_tables_charset_is_refused_and_nothing_written(strict: bool) -> None:
    # Before: a raw OperationalError 1366 in strict mode, the reason stored as ??? without it.
    table = PausedQueue._meta.db_table
    with column_in("latin1", table, "reason"), session_variable("sql_mode", "STRICT_TRANS_TABLES" if strict else ""):
        refused = (
            "Cannot store the pause of queue 'mail': reason 'провайдер' holds 'п' (U+043F), which the character "
            f"set latin1 cannot store (the column {table}.reason; the queue needs utf8mb4)."
        )
        with pytest.raises(ValueError, match=f"^{re.escape(refused)}$"):
            pause_queue("mail", "провайдер")
        assert not PausedQueue.objects.exists()
        assert pause_queue("mail", "répört €") is True
        assert PausedQueue.objects.get().reason == "répört €"


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_a_queue_name_outside_the_connections_charset_is_refused() -> None:
    # Before: a raw OperationalError 1267 ("Illegal mix of collations") from the lookup.
    with session_variable("character_set_client", "utf8mb3"), session_variable("character_set_connection", "utf8mb3"):
        problem = "queue '🙂' holds '🙂' (U+1F642), which the character set utf8mb3 cannot store"
        for act in (pause_queue, resume_queue):
            with pytest.raises(ValueError, match=re.escape(f"{problem} (this connection's character_set_client;")):
                act("🙂")
        assert pause_queue("レポート") is True
        assert resume_queue("レポート") is True
    assert not PausedQueue.objects.exists()
