"""What every engine must do for inserts, run against the engine of the database under
test: the same rows written and read back on each, whatever way its rows travel
(``COPY``, arrays, values written into the statement's text, bound parameters)."""

from __future__ import annotations

import datetime

import pytest
from django.core.exceptions import EmptyResultSet
from django.db import connections

from django_sqlqueue.db.engines import engine
from django_sqlqueue.db.engines.base import Engine
from django_sqlqueue.db.engines.mysql import MySQL
from django_sqlqueue.db.engines.postgresql import PostgreSQL
from django_sqlqueue.db.expressions import PrimaryKeyIn
from django_sqlqueue.models import Job, JobTag
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


@pytest.fixture
def ways() -> Engine:
    return engine(connections["default"])


def test_many_jobs_come_back_saved_with_the_ids_of_their_rows(ways: Engine) -> None:
    jobs = Job.objects.enqueue_many([Job.objects.build(noop, [n], kwargs={"n": "é" * n}) for n in range(5)])
    if ways.returns_rows or ways.copies:
        assert [(job.pk, job.args, job.kwargs) for job in jobs] == list(
            Job.objects.order_by("pk").values_list("pk", "args", "kwargs")
        )
    assert sorted(Job.objects.values_list("args", flat=True)) == [[n] for n in range(5)]


def test_tagged_and_dependent_jobs_written_together_are_told_apart_on_every_engine(ways: Engine) -> None:
    parent = Job.objects.enqueue(noop)
    jobs = Job.objects.enqueue_many(
        [Job.objects.build(noop, [n], tags=[f"t{n}"], after=[parent] if n else None) for n in range(4)]
    )
    assert all(job.pk is not None for job in jobs)
    assert {tag.job_id: tag.tag for tag in JobTag.objects.all()} == {job.pk: f"t{n}" for n, job in enumerate(jobs)}
    # No mark is left behind in the rows whatever way the engine learnt the ids.
    assert set(Job.objects.values_list("worker", flat=True)) == {""}


def test_a_held_unique_key_keeps_its_job_out_and_the_others_in(ways: Engine) -> None:
    held = Job.objects.enqueue(noop, unique_key="held")
    jobs = Job.objects.enqueue_many(
        [Job.objects.build(noop, [n], unique_key=key) for n, key in enumerate(["a", "held", "b"])]
    )
    assert [(job.created, job.pk == held.pk) for job in jobs] == [(True, False), (False, True), (True, False)]
    assert set(Job.objects.exclude(pk=held.pk).values_list("unique_key", flat=True)) == {"a", "b"}
    assert set(Job.objects.values_list("worker", flat=True)) == {""}


def test_plain_rows_are_written_and_counted(ways: Engine) -> None:
    assert Job.objects.enqueue_rows([(noop, [n], None) for n in range(7)], batch_size=3) == 7
    assert sorted(Job.objects.values_list("args", flat=True)) == [[n] for n in range(7)]


def test_a_batchs_ids_select_its_jobs_and_no_ids_select_nothing(ways: Engine) -> None:
    jobs = [Job.objects.enqueue(noop, [n]) for n in range(3)]
    assert set(Job.objects.filter(PrimaryKeyIn([jobs[0].pk, jobs[2].pk])).values_list("pk", flat=True)) == {
        jobs[0].pk,
        jobs[2].pk,
    }
    with pytest.raises(EmptyResultSet):
        ways.ids_in("id", [])


def test_a_time_reads_as_stored(ways: Engine) -> None:
    when = datetime.datetime(2031, 1, 1, tzinfo=datetime.timezone.utc)
    job = Job.objects.enqueue(noop, run_at=when)
    assert Job.objects.annotate(shown=ways.readable("run_at")).get(pk=job.pk).shown == when


def test_a_small_statement_is_never_too_large(ways: Engine) -> None:
    assert not ways.too_large("SELECT %s", ["x"])
    most = ways.most_statement_bytes()
    assert most is None or most > 0


def test_ascii_and_any_character_fit_the_test_databases(ways: Engine) -> None:
    assert ways.text_problem(Job, {"queue": "é€😀"}) is None
    assert ways.tables_charset_problem([Job._meta.db_table]) is None
    assert ways.connection_charset_problem() is None
    assert ways.strict_mode_problem() is None


def test_values_are_bound_apart_or_written_in_as_the_driver_would(ways: Engine) -> None:
    texts = ways.literal_rows([(("a'b", 1), (("%s", ("x",)),))], "0")
    assert texts is None or texts == ["('a\\'b', 1, 'x', 0)"]


@pytest.mark.parametrize(
    ("engine_class", "keyed", "identified", "marked"),
    [
        (PostgreSQL, True, True, False),
        (MySQL, False, False, False),
        (MySQL, True, False, True),
    ],
)
def test_only_mysql_marks_the_rows_it_cannot_otherwise_tell(
    engine_class: type[Engine], keyed: bool, identified: bool, marked: bool
) -> None:
    assert engine_class(connections["default"]).marks_new_rows(keyed, identified) is marked


def test_postgresql_binds_a_batchs_ids_as_one_array() -> None:
    assert PostgreSQL(connections["default"]).ids_in("id", [1, 2]) == ("id = ANY(%s)", ([1, 2],))
    assert MySQL(connections["default"]).ids_in("id", [1, 2]) == ("id IN (%s, %s)", (1, 2))
