"""``db/engines/mysql_packets.py``: multi-row INSERTs cut to MySQL/MariaDB's ``max_allowed_packet``."""

from __future__ import annotations

import pytest
from django.db import connection, connections, transaction

from django_sqlqueue.db.engines import engine, mysql_packets
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop

mysql_only = pytest.mark.skipif(connection.vendor != "mysql", reason="max_allowed_packet is MySQL/MariaDB's")


def test_a_row_counts_the_bytes_of_its_text_and_its_comma() -> None:
    assert mysql_packets.text_bytes("('ab', 5)") == 11
    assert mysql_packets.text_bytes("('é')") == 8


def test_statements_are_cut_by_rows_and_by_bytes() -> None:
    assert mysql_packets.cut([10] * 5, 2, 1000, ["t"] * 5) == [0, 2, 4]
    assert mysql_packets.cut([400, 400, 400, 100], 10, 1000, ["t"] * 4) == [0, 2]
    assert mysql_packets.cut([1000, 1, 1000], 10, 1000, ["t"] * 3) == [0, 1, 2]


def test_a_row_no_statement_holds_is_refused_naming_its_task() -> None:
    with pytest.raises(InvalidJobError, match="Cannot enqueue big: its arguments and options take 1,001 bytes"):
        mysql_packets.cut([1, 1001], 10, 1000, ["small", "big"])


@pytest.mark.django_db
def test_no_limit_but_mysqls() -> None:
    assert (engine(connections["default"]).most_statement_bytes() is None) == (connection.vendor != "mysql")


@mysql_only
@pytest.mark.django_db
def test_jobs_larger_together_than_a_packet_are_written() -> None:
    """1,000 jobs a little larger than a thousandth of the packet each: past it together."""
    packet = mysql_packets.most_statement_bytes(connection)
    assert packet is not None
    size = packet // 1000 + 1000
    jobs = Job.objects.enqueue_many(Job.objects.build(noop, ["x" * size]) for _ in range(1000))
    assert len({job.pk for job in jobs}) == 1000
    assert Job.objects.count() == 1000
    assert Job.objects.enqueue_rows([(noop, ["x" * size], None)] * 1000) == 1000


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_a_job_larger_than_a_packet_is_refused_and_nothing_is_written() -> None:
    packet = mysql_packets.most_statement_bytes(connection)
    assert packet is not None
    # Each quote is escaped: two bytes of the statement.
    jobs = [Job.objects.build(noop, [1]), Job.objects.build(noop, ["'" * (packet // 2 + 1)])]
    with pytest.raises(InvalidJobError, match=r"more than the [0-9,]+ of the server's max_allowed_packet"):
        Job.objects.enqueue_many(jobs)
    assert Job.objects.count() == 0
    # As many bytes unescaped fit: a row is measured as it is sent, not at its worst.
    (written,) = Job.objects.enqueue_many([Job.objects.build(noop, ["x" * (packet // 2 + 1)])])
    assert len(Job.objects.get(pk=written.pk).args[0]) == packet // 2 + 1
    Job.objects.all().delete()
    with transaction.atomic():  # the connection goes on
        assert len(Job.objects.enqueue_many([Job.objects.build(noop, [n]) for n in range(2)])) == 2


@pytest.mark.django_db
def test_too_large_is_a_statement_past_the_packet_on_mysql_alone() -> None:
    """MariaDB ends the connection of a statement past ``max_allowed_packet``; no other
    database ends one for its size."""
    if connection.vendor != "mysql":
        assert not engine(connections["default"]).too_large("SELECT %s", ["x" * 100_000_000])
        return
    with connection.cursor() as cursor:
        cursor.execute("SELECT @@max_allowed_packet")
        (packet,) = cursor.fetchone()
    sql = "SELECT %s"
    fits = "x" * (packet - len(sql) - 10)
    assert not engine(connections["default"]).too_large(sql, [fits])
    # Each quote escaped: twice the bytes in the statement's text.
    assert engine(connections["default"]).too_large(sql, ["'" * (packet // 2 + 1)])
