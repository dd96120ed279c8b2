"""The migrations (``django_sqlqueue/migrations/``): in step with the models, reversible,
and PostgreSQL's extras."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection

from django_sqlqueue.db.indexes import InStatus, finished_in
from django_sqlqueue.models import Job, JobStatus
from django_sqlqueue.reporting.counting import status_counts
from django_sqlqueue.rules.lifecycle import FINISHED
from tests.support.migrating import migrate
from tests.testapp.tasks import noop

JOB_TABLE = Job._meta.db_table
INDEXES = {"sqlqueue_job_ready", "sqlqueue_job_ready_queue", "sqlqueue_job_running", "sqlqueue_job_failed"}
AUTOVACUUM = [
    "autovacuum_vacuum_scale_factor=0.01",
    "autovacuum_vacuum_threshold=1000",
    "autovacuum_vacuum_cost_delay=0",
    "autovacuum_analyze_scale_factor=0.02",
]


@pytest.fixture
def postgresql() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("table storage parameters and triggers exist on PostgreSQL only")


def tables() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.table_names(cursor))


def constraint_names() -> set[str]:
    with connection.cursor() as cursor:
        return set(connection.introspection.get_constraints(cursor, JOB_TABLE))


def reloptions() -> list[str] | None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reloptions FROM pg_class WHERE oid = %s::regclass", [JOB_TABLE])
        options: list[str] | None = cursor.fetchone()[0]
        return options


def notify_trigger_exists() -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'sqlqueue_job_notify' AND tgrelid = %s::regclass",
            [JOB_TABLE],
        )
        return bool(cursor.fetchone()[0])


@pytest.mark.django_db
def test_models_and_migrations_agree() -> None:
    stdout = StringIO()
    try:
        call_command("makemigrations", "django_sqlqueue", "--check", "--dry-run", stdout=stdout)
    except SystemExit:
        pytest.fail(
            "The models changed without a migration. Run `python manage.py makemigrations django_sqlqueue "
            f"--name <what_changed>` and commit it:\n{stdout.getvalue()}"
        )
    assert stdout.getvalue() == "No changes detected in app 'django_sqlqueue'\n"


@pytest.mark.django_db
def test_indexes_and_constraints_exist() -> None:
    assert constraint_names() >= INDEXES | {
        "sqlqueue_job_priority_range",
        "sqlqueue_job_max_attempts_min",
        "sqlqueue_job_timeout_positive",
        "sqlqueue_job_status_valid",
        "sqlqueue_job_queue_not_empty",
    }


@pytest.mark.django_db
@pytest.mark.usefixtures("postgresql")
def test_autovacuum_is_tuned_on_postgresql() -> None:
    assert reloptions() == AUTOVACUUM


@pytest.mark.django_db(transaction=True)
def test_migrations_reverse_and_apply_again() -> None:
    migrate("zero")
    assert JOB_TABLE not in tables()
    assert "django_sqlqueue_worker" not in tables()

    migrate(None)
    assert {JOB_TABLE, "django_sqlqueue_worker"} <= tables()
    assert constraint_names() >= INDEXES
    job = Job.objects.enqueue(noop)
    assert [claimed.pk for claimed in Job.objects.claim(worker_id="w")] == [job.pk]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("postgresql")
def test_postgresql_migrations_reverse_and_apply_again() -> None:
    migrate("0001_initial")
    assert reloptions() is None
    assert not notify_trigger_exists()

    migrate(None)
    assert reloptions() == AUTOVACUUM
    assert notify_trigger_exists()


@pytest.mark.django_db(transaction=True)
def test_the_last_errors_class_is_filled_for_the_jobs_already_there() -> None:
    migrate("0004_admin_permissions_and_indexes")
    error = {"attempt": 1, "worker": "w", "started_at": None, "message": "m", "traceback": "t"}
    rows = {
        "FAILED": [{**error, "exception_class_path": "builtins.OSError"}, {**error, "exception_class_path": "a.B"}],
        "READY": [{**error, "exception_class_path": "x" * 300}],
        "CANCELLED": [],
        "SUCCESSFUL": [{**error, "exception_class_path": "builtins.KeyError"}],
    }
    with connection.cursor() as cursor:
        for status, errors in rows.items():
            cursor.execute(
                f"INSERT INTO {JOB_TABLE} (queue, task, args, kwargs, priority, status, run_at, attempts,"
                " max_attempts, enqueued_at, worker, errors) VALUES ('default', 't', '[]', '{}', 0, %s,"
                " CURRENT_TIMESTAMP, 1, 3, CURRENT_TIMESTAMP, '', %s)",
                [status, json.dumps(errors)],
            )
    migrate(None)
    assert dict(Job.objects.values_list("status", "last_error_class")) == {
        "FAILED": "a.B",
        "READY": "x" * 255,
        "CANCELLED": "",
        "SUCCESSFUL": "",  # finished well: the failures page never reads it
    }


#: The admin's indexes that 0025 remakes.
ADMIN_INDEXES = ("sqlqueue_job_queue_status", "sqlqueue_job_finished")


def index_definitions(names: tuple[str, ...] = ADMIN_INDEXES) -> dict[str, str]:
    """The indexes ``names``, each as the
    database defines it: on PostgreSQL its ``CREATE INDEX`` (with any ``WHERE``),
    elsewhere its columns."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)", [list(names)])
            return dict(cursor.fetchall())
    with connection.cursor() as cursor:
        constraints = connection.introspection.get_constraints(cursor, JOB_TABLE)
    return {name: ", ".join(constraints[name]["columns"]) for name in names if name in constraints}


@pytest.mark.django_db(transaction=True)
def test_0025_keeps_ready_running_and_finished_jobs_and_the_admin_indexes_hold_finished_ones() -> None:
    migrate("0024_job_snoozes")
    before = index_definitions()
    statuses = ["READY", "RUNNING", "SUCCESSFUL", "FAILED", "CANCELLED"]
    with connection.cursor() as cursor:
        for status in statuses:
            finished = "CURRENT_TIMESTAMP" if status in {"SUCCESSFUL", "FAILED", "CANCELLED"} else "NULL"
            cursor.execute(
                f"INSERT INTO {JOB_TABLE} (queue, task, args, kwargs, priority, status, run_at, attempts,"
                " max_attempts, enqueued_at, finished_at, worker, errors) VALUES ('default', %s, '[]', '{}', 0,"
                f" %s, CURRENT_TIMESTAMP, 1, 3, CURRENT_TIMESTAMP, {finished}, %s, '[]')",
                ["tests.testapp.tasks.noop", status, "w" if status == "RUNNING" else ""],
            )
    rows = sorted(Job.objects.values_list("pk", "status", "finished_at", "worker"))

    migrate("0025_partial_admin_indexes")
    assert sorted(Job.objects.values_list("pk", "status", "finished_at", "worker")) == rows
    after = index_definitions()
    if connection.vendor == "postgresql":
        assert after["sqlqueue_job_queue_status"].endswith(
            "WHERE ((status)::text = ANY ((ARRAY['SUCCESSFUL'::character varying, 'FAILED'::character varying, "
            "'CANCELLED'::character varying])::text[]))"
        )
        assert after["sqlqueue_job_finished"].endswith("WHERE (finished_at IS NOT NULL)")
        with connection.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM pg_index WHERE NOT indisvalid")
            assert cursor.fetchone()[0] == 0
    else:  # nothing to gain there: unchanged
        assert after == before

    migrate("0024_job_snoozes")
    assert index_definitions() == before
    migrate("0025_partial_admin_indexes")
    assert index_definitions() == after
    migrate(None)
    ready = Job.objects.get(status="READY")
    assert [claimed.pk for claimed in Job.objects.claim(worker_id="w2")] == [ready.pk]


@pytest.mark.django_db(transaction=True)
def test_0027_moves_the_waiting_index_off_status_on_mysql_only() -> None:
    migrate("0026_batches")
    waiting = ("sqlqueue_job_waiting",)
    before = index_definitions(waiting)
    parent = Job.objects.enqueue(noop)
    child = Job.objects.enqueue(noop, after=[parent])

    migrate(None)
    after = index_definitions(waiting)
    if connection.vendor == "mysql":
        assert (before, after) == ({"sqlqueue_job_waiting": "status, queue"}, {"sqlqueue_job_waiting": "waiting_queue"})
    else:  # the partial index it was
        assert after == before
    assert list(Job.objects.filter(InStatus(JobStatus.WAITING)).values_list("pk", "queue")) == [(child.pk, "default")]

    migrate("0026_batches")
    assert index_definitions(waiting) == before
    assert list(Job.objects.filter(status=JobStatus.WAITING).values_list("pk", flat=True)) == [child.pk]
    migrate(None)
    assert index_definitions(waiting) == after


@pytest.mark.django_db(transaction=True)
def test_0028_adds_the_deadline_to_the_claim_indexes_and_keeps_the_jobs() -> None:
    migrate("0027_waiting_index_hidden")
    claim_indexes = ("sqlqueue_job_ready", "sqlqueue_job_ready_queue")
    before = index_definitions(claim_indexes)
    first, second = Job.objects.enqueue(noop), Job.objects.enqueue(noop, expires_in=3600)

    migrate(None)
    after = index_definitions(claim_indexes)
    assert all("expires_at" in after[name] and "expires_at" not in before[name] for name in claim_indexes)
    assert [job.pk for job in Job.objects.claim(worker_id="w")] == [first.pk, second.pk]

    migrate("0027_waiting_index_hidden")
    assert index_definitions(claim_indexes) == before
    migrate(None)
    assert index_definitions(claim_indexes) == after


@pytest.mark.django_db(transaction=True)
def test_0029_puts_the_finished_indexes_on_a_hidden_column_on_mysql_only() -> None:
    migrate("0028_claim_indexes_hold_expiry")
    before = index_definitions()
    succeeded, running, ready = (Job.objects.enqueue(noop) for _ in range(3))
    claimed = {job.pk: job for job in Job.objects.claim(worker_id="w", limit=2)}
    Job.objects.finish(worker_id="w", succeeded={claimed[succeeded.pk]: None})
    Job.objects.cancel([Job.objects.enqueue(noop, queue="other").pk])
    counts = {"default": {"SUCCESSFUL": 1, "RUNNING": 1, "READY": 1}, "other": {"CANCELLED": 1}}

    migrate(None)
    after = index_definitions()
    if connection.vendor == "mysql":
        assert (before, after) == (
            {"sqlqueue_job_queue_status": "queue, status", "sqlqueue_job_finished": "finished_at, status"},
            {
                "sqlqueue_job_queue_status": "queue, finished_status",
                "sqlqueue_job_finished": "finished_at, finished_status",
            },
        )
    else:  # the indexes they were (partial on PostgreSQL since 0025)
        assert after == before
    assert status_counts(Job.objects.get_queryset()) == counts
    assert Job.objects.filter(finished_in(*FINISHED)).count() == 2
    Job.objects.finish(worker_id="w", succeeded={claimed[running.pk]: None})  # the entry is written by the finish
    assert list(Job.objects.filter(finished_in(JobStatus.SUCCESSFUL)).order_by("pk").values_list("pk", flat=True)) == [
        succeeded.pk,
        running.pk,
    ]

    migrate("0028_claim_indexes_hold_expiry")
    assert index_definitions() == before
    assert Job.objects.filter(status=JobStatus.SUCCESSFUL).count() == 2
    assert [job.pk for job in Job.objects.claim(worker_id="w")] == [ready.pk]
    migrate(None)
    assert index_definitions() == after
