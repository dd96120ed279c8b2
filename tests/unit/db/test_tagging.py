"""Tags (``db/tagging.py``, ``enqueue(tags=…)``, ``Job.objects.tagged()``): rows of a
side table, found by their index, deleted with their jobs by the database itself."""

from __future__ import annotations

import datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import override_settings

from django_sqlqueue import job
from django_sqlqueue.db import pruning
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job, JobStatus, JobTag
from django_sqlqueue.rules.limits import MAX_TAGS
from tests.testapp.tasks import import_rows, noop, record

pytestmark = pytest.mark.django_db


def tags_of(made: Job) -> list[str]:
    return Job.objects.get(pk=made.pk).tag_names()


def test_enqueue_writes_the_tasks_tags_and_its_own() -> None:
    made = Job.objects.enqueue(import_rows, ["s3"], tags=["tenant:42", "import"])
    assert tags_of(made) == ["import", "nightly", "tenant:42"]
    assert tags_of(Job.objects.enqueue(record, ["t"])) == []


def test_tagged_finds_the_jobs_with_every_tag() -> None:
    first = Job.objects.enqueue(record, ["1"], tags=["tenant:42", "import"])
    second = Job.objects.enqueue(record, ["2"], tags=["tenant:42"])
    Job.objects.enqueue(record, ["3"], tags=["tenant:7"])
    assert sorted(Job.objects.tagged("tenant:42").values_list("pk", flat=True)) == [first.pk, second.pk]
    assert list(Job.objects.tagged("tenant:42", "import").values_list("pk", flat=True)) == [first.pk]
    assert list(Job.objects.tagged("nothing").filter(status=JobStatus.READY)) == []


def test_enqueue_many_tags_each_job_with_its_own() -> None:
    """MySQL returns no ids from a multi-row INSERT: the rows are read back by the insert's token."""
    built = [Job.objects.build(record, [str(n)], tags=[f"n:{n}"]) for n in range(5)]
    built.append(Job.objects.build(record, ["none"]))
    made = Job.objects.enqueue_many(built)
    assert [tags_of(each) for each in made] == [[f"n:{n}"] for n in range(5)] + [[]]
    assert set(Job.objects.values_list("worker", flat=True)) == {""}


def test_a_unique_job_kept_out_writes_no_tags() -> None:
    from tests.testapp.tasks import sync_order

    kept = Job.objects.enqueue(sync_order, [1], tags=["first"])
    again = Job.objects.enqueue(sync_order, [1], tags=["second"])
    assert (again.pk, again.created) == (kept.pk, False)
    assert list(JobTag.objects.values_list("tag", flat=True)) == ["first"]


@pytest.mark.parametrize(
    ("tags", "message"),
    [
        ("tenant:42", "tags must be a list of strings, not str"),
        ([42], "a tag must be a string, not int"),
        ([""], "is not 1 to 64 characters long"),
        (["x" * 65], "is not 1 to 64 characters long"),
        (["has space"], "tag 'has space' holds characters other than letters, digits and _ . : / = @ -"),
        ([f"t{n}" for n in range(MAX_TAGS + 1)], f"a job may have at most {MAX_TAGS} tags, not {MAX_TAGS + 1}"),
    ],
    ids=["string", "int", "empty", "long", "space", "many"],
)
def test_bad_tags_are_refused(tags: object, message: str) -> None:
    with pytest.raises(InvalidJobError) as excinfo:
        Job.objects.enqueue(record, ["x"], tags=tags)  # type: ignore[arg-type]
    assert message in str(excinfo.value)
    assert not Job.objects.exists()
    assert not JobTag.objects.exists()


def test_a_tag_changed_after_build_is_checked_again() -> None:
    built = Job.objects.build(record, ["x"])
    built.new_tags = ("bad tag",)
    with pytest.raises(InvalidJobError, match="holds characters other than"):
        Job.objects.enqueue_many([built])
    assert not Job.objects.exists()


def test_bad_task_tags_are_refused_at_registration() -> None:
    with pytest.raises(ImproperlyConfigured, match="holds characters other than"):

        @job(name="tests.tagged_badly", tags=["no spaces"])
        def tagged_badly() -> None: ...


def test_enqueue_rows_refuses_a_tagged_task() -> None:
    with pytest.raises(InvalidJobError, match=r"has @job\(tags=\.\.\.\): enqueue_rows writes no tags"):
        Job.objects.enqueue_rows([(import_rows, ["a"], None)])
    assert not Job.objects.exists()


def test_the_database_deletes_a_jobs_tags_with_it() -> None:
    """Not Django's cascade: the statements that delete jobs (pruning, a success not
    kept) delete by primary key in one statement and know nothing of tags."""
    gone = Job.objects.enqueue(record, ["gone"], tags=["a", "b"])
    kept = Job.objects.enqueue(record, ["kept"], tags=["a"])
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {Job._meta.db_table} WHERE id = %s", [gone.pk])
    assert list(JobTag.objects.values_list("job_id", "tag")) == [(kept.pk, "a")]
    Job.objects.filter(pk=kept.pk).delete()
    assert not JobTag.objects.exists()


def test_pruning_leaves_no_tags_behind() -> None:
    made = Job.objects.enqueue(noop, tags=["old"])
    Job.objects.filter(pk=made.pk).update(
        status=JobStatus.CANCELLED, finished_at=datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)
    )
    pruned = pruning.prune(Job.objects.on_queue_db(), {JobStatus.CANCELLED: datetime.timedelta(days=1)})
    assert pruned.deleted[JobStatus.CANCELLED] == 1
    assert not JobTag.objects.exists()


@override_settings(SQLQUEUE_RETENTION={"SUCCESSFUL": 0})
def test_a_success_not_kept_leaves_no_tags_behind() -> None:
    Job.objects.enqueue(record, ["x"], tags=["t"])
    (claimed,) = Job.objects.claim(worker_id="w1")
    assert Job.objects.finish(worker_id="w1", succeeded={claimed: None}) == 1
    assert not Job.objects.exists()
    assert not JobTag.objects.exists()


def test_tagged_reads_the_tags_index() -> None:
    Job.objects.enqueue(record, ["x"], tags=["tenant:42"])
    query = Job.objects.tagged("tenant:42")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A table this small is read whole by choice; the index must be there to take.
            cursor.execute("SET LOCAL enable_seqscan = off")
        sql, params = query.query.sql_with_params()
        cursor.execute(f"{'EXPLAIN QUERY PLAN' if connection.vendor == 'sqlite' else 'EXPLAIN'} {sql}", params)
        plan = " ".join(str(cell) for row in cursor.fetchall() for cell in row)
    # SQLite makes the unique constraint an index of its own naming, in CREATE TABLE.
    index = (
        "sqlite_autoindex_django_sqlqueue_jobtag_1 (tag=?)"
        if connection.vendor == "sqlite"
        else "sqlqueue_jobtag_tag_job"
    )
    assert index in plan
