"""The queue's tables as 0.1.0 made them, on every database at once.

Beside what the models declare, three things only a migration can say: the jobs' tags'
foreign key deletes them with their job (``ON DELETE CASCADE``, ``db/tagging.py``); and
on PostgreSQL the jobs table is vacuumed often, and wakes idle workers when jobs commit.

PostgreSQL's autovacuum: every claim and every finish rewrites a row, leaving a dead
tuple behind; with the default thresholds (20% of the table) a busy queue over a large
table of finished jobs piles up millions of them, and the claim's index scans wade
through them. Other databases clean up in place and need nothing.

PostgreSQL's wake-up: a statement-level trigger sends one ``NOTIFY sqlqueue`` per INSERT
statement (one per ``enqueue``, one per batch of ``enqueue_many``). PostgreSQL delivers
notifications only when the transaction commits, so a worker never wakes for a job it
cannot see yet, and the enqueue costs no extra round trip. Other databases poll."""

from __future__ import annotations

import django.db.models.deletion
from django.db import migrations, models
from django.db.backends.base.schema import BaseDatabaseSchemaEditor
from django.db.migrations.state import StateApps

import django_sqlqueue.db.clock
import django_sqlqueue.db.schema.failures
import django_sqlqueue.db.schema.indexes
import django_sqlqueue.db.schema.names
import django_sqlqueue.db.schema.tag_table

AUTOVACUUM = (
    "autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_threshold = 1000, "
    "autovacuum_vacuum_cost_delay = 0, autovacuum_analyze_scale_factor = 0.02"
)
RESET = (
    "autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, "
    "autovacuum_vacuum_cost_delay, autovacuum_analyze_scale_factor"
)
CHANNEL = "sqlqueue"


def _job_table(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> str:
    return schema_editor.quote_name(apps.get_model("django_sqlqueue", "Job")._meta.db_table)


def tune_autovacuum(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {_job_table(apps, schema_editor)} SET ({AUTOVACUUM})")


def untune_autovacuum(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f"ALTER TABLE {_job_table(apps, schema_editor)} RESET ({RESET})")


def create_notify_trigger(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(
        "CREATE OR REPLACE FUNCTION sqlqueue_job_notify() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN PERFORM pg_notify('{CHANNEL}', ''); RETURN NULL; END $$"
    )
    schema_editor.execute(
        f"CREATE TRIGGER sqlqueue_job_notify AFTER INSERT ON {_job_table(apps, schema_editor)} "
        "FOR EACH STATEMENT EXECUTE FUNCTION sqlqueue_job_notify()"
    )


def drop_notify_trigger(apps: StateApps, schema_editor: BaseDatabaseSchemaEditor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    schema_editor.execute(f"DROP TRIGGER IF EXISTS sqlqueue_job_notify ON {_job_table(apps, schema_editor)}")
    schema_editor.execute("DROP FUNCTION IF EXISTS sqlqueue_job_notify()")


class Migration(migrations.Migration):
    initial = True

    operations = [
        migrations.CreateModel(
            name="ConcurrencyKey",
            fields=[
                ("key", django_sqlqueue.db.schema.names.NameField(max_length=255, primary_key=True, serialize=False)),
            ],
            options={
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="Leader",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("role", django_sqlqueue.db.schema.names.NameField(max_length=50, unique=True)),
                (
                    "holder",
                    django_sqlqueue.db.schema.names.NameField(
                        help_text="The supervisor: host:pid, after --name-prefix.", max_length=255
                    ),
                ),
                (
                    "acquired_at",
                    models.DateTimeField(
                        db_default=django_sqlqueue.db.clock.DatabaseNow(), help_text="When this holder took it."
                    ),
                ),
                ("expires_at", models.DateTimeField()),
            ],
        ),
        migrations.CreateModel(
            name="PausedQueue",
            fields=[
                ("queue", django_sqlqueue.db.schema.names.NameField(max_length=100, primary_key=True, serialize=False)),
                ("reason", models.CharField(blank=True, default="", max_length=255)),
                ("paused_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
            ],
            options={
                "ordering": ["queue"],
                "permissions": [("pause_queue", "Can pause queues"), ("resume_queue", "Can resume paused queues")],
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="RateBucket",
            fields=[
                ("name", django_sqlqueue.db.schema.names.NameField(max_length=100, primary_key=True, serialize=False)),
                ("tokens", models.FloatField()),
                ("updated_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
            ],
            options={
                "default_permissions": (),
            },
        ),
        migrations.CreateModel(
            name="Worker",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("name", django_sqlqueue.db.schema.names.NameField(max_length=255, unique=True)),
                ("host", models.CharField(max_length=255)),
                ("pid", models.PositiveIntegerField()),
                (
                    "queues",
                    models.JSONField(blank=True, help_text="The queues it claims from; empty for all.", null=True),
                ),
                ("started_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
                ("heartbeat_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
                ("jobs_succeeded", models.PositiveBigIntegerField(default=0)),
                ("jobs_failed", models.PositiveBigIntegerField(default=0)),
                (
                    "candidates_lost",
                    models.PositiveBigIntegerField(
                        default=0,
                        help_text="Ready jobs its claims found locked by another worker first (MySQL/MariaDB only).",
                    ),
                ),
            ],
        ),
        migrations.CreateModel(
            name="FinishedHour",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("hour", models.DateTimeField()),
                ("queue", django_sqlqueue.db.schema.names.NameField(blank=True, max_length=100)),
                ("succeeded", models.PositiveBigIntegerField()),
                ("failed", models.PositiveBigIntegerField()),
            ],
            options={
                "default_permissions": (),
                "constraints": [models.UniqueConstraint(fields=("hour", "queue"), name="sqlqueue_finishedhour_unique")],
            },
        ),
        migrations.CreateModel(
            name="Job",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("queue", django_sqlqueue.db.schema.names.NameField(max_length=100)),
                ("task", models.CharField(help_text="The registered name of the task.", max_length=255)),
                ("args", models.JSONField(blank=True, default=list)),
                ("kwargs", models.JSONField(blank=True, default=dict)),
                ("priority", models.SmallIntegerField(default=0, help_text="Higher runs first.")),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("WAITING", "Waiting"),
                            ("READY", "Ready"),
                            ("RUNNING", "Running"),
                            ("SUCCESSFUL", "Successful"),
                            ("FAILED", "Failed"),
                            ("CANCELLED", "Cancelled"),
                        ],
                        default="READY",
                        max_length=10,
                    ),
                ),
                (
                    "run_at",
                    models.DateTimeField(
                        db_default=django_sqlqueue.db.clock.DatabaseNow(), help_text="Not claimed before this time."
                    ),
                ),
                (
                    "attempts",
                    models.PositiveIntegerField(default=0, help_text="Attempts started so far, counted at claim."),
                ),
                ("max_attempts", models.PositiveIntegerField()),
                (
                    "snoozes",
                    models.PositiveIntegerField(
                        db_default=0,
                        default=0,
                        help_text="Times its task snoozed (raise Snooze): each gave its attempt back, uncounted.",
                    ),
                ),
                (
                    "timeout",
                    models.FloatField(
                        blank=True, help_text="Seconds an attempt may run; empty for no limit.", null=True
                    ),
                ),
                ("enqueued_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
                (
                    "started_at",
                    models.DateTimeField(blank=True, help_text="When the latest attempt was claimed.", null=True),
                ),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "worker",
                    django_sqlqueue.db.schema.names.NameField(
                        blank=True, help_text="The worker that holds or last held the job.", max_length=255
                    ),
                ),
                (
                    "errors",
                    models.JSONField(
                        blank=True, default=list, help_text="Every failed attempt's exception and traceback."
                    ),
                ),
                (
                    "last_error_class",
                    models.CharField(
                        blank=True,
                        db_default="",
                        default="",
                        help_text="The exception class of the last failed attempt; empty when none failed.",
                        max_length=255,
                    ),
                ),
                ("result", models.JSONField(blank=True, null=True)),
                (
                    "cancel_requested_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="When someone asked to cancel the job while it ran (the database's clock).",
                        null=True,
                    ),
                ),
                (
                    "progress",
                    models.JSONField(
                        blank=True,
                        help_text='The last progress its task reported: {"done", "total", "message"}.',
                        null=True,
                    ),
                ),
                ("concurrency_key", django_sqlqueue.db.schema.names.NameField(blank=True, max_length=255, null=True)),
                ("concurrency_limit", models.PositiveIntegerField(blank=True, null=True)),
                (
                    "unique_key",
                    django_sqlqueue.db.schema.names.NameField(
                        blank=True,
                        help_text="No other ready or running job has this key (see the docs: Unique jobs).",
                        max_length=255,
                        null=True,
                    ),
                ),
                (
                    "unique_until_pruned",
                    models.BooleanField(
                        db_default=False,
                        default=False,
                        help_text="It keeps its unique key after it ends, until it is pruned.",
                    ),
                ),
                (
                    "waiting_for",
                    models.PositiveIntegerField(
                        db_default=0,
                        default=0,
                        help_text="How many of the jobs it was enqueued after have not finished.",
                    ),
                ),
                (
                    "runs_after_failure",
                    models.BooleanField(
                        db_default=False,
                        default=False,
                        help_text='after_failure="run": it runs even when a job it waits for failed or was cancelled.',
                    ),
                ),
                (
                    "expires_at",
                    models.DateTimeField(
                        blank=True,
                        help_text="Never started from this time on (the database's clock); empty for never.",
                        null=True,
                    ),
                ),
                (
                    "end_reason",
                    models.CharField(
                        blank=True,
                        choices=[("expired", "expired")],
                        db_default="",
                        default="",
                        help_text=(
                            "Why it ended so, where its status does not say: expired (not started by its expires_at)."
                        ),
                        max_length=32,
                    ),
                ),
                (
                    "batch_id",
                    models.BigIntegerField(
                        blank=True, help_text="The batch it belongs to (Job.objects.batch()), by id.", null=True
                    ),
                ),
                (
                    "meta",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="Free JSON of the caller's and the task's own (current_job().add_meta).",
                        null=True,
                    ),
                ),
            ],
            options={
                "permissions": [
                    ("retry_job", "Can retry failed or cancelled jobs"),
                    ("cancel_job", "Can cancel jobs (ready ones at once, running ones by request)"),
                    ("run_job_now", "Can run scheduled jobs now"),
                ],
                "abstract": False,
                "indexes": [
                    django_sqlqueue.db.schema.indexes.StatusIndex(
                        fields=["-priority", "run_at", "id", "expires_at"], name="sqlqueue_job_ready", status="READY"
                    ),
                    django_sqlqueue.db.schema.indexes.StatusIndex(
                        fields=["queue", "-priority", "run_at", "id", "expires_at"],
                        name="sqlqueue_job_ready_queue",
                        status="READY",
                    ),
                    django_sqlqueue.db.schema.indexes.HiddenStatusIndex(
                        field="queue", name="sqlqueue_job_waiting", status="WAITING"
                    ),
                    django_sqlqueue.db.schema.indexes.ExpiringIndex(name="sqlqueue_job_expiring"),
                    django_sqlqueue.db.schema.indexes.StatusIndex(
                        fields=["worker"], name="sqlqueue_job_running", status="RUNNING"
                    ),
                    django_sqlqueue.db.schema.indexes.KeyedIndex(
                        fields=["concurrency_key", "status"], name="sqlqueue_job_concurrency"
                    ),
                    django_sqlqueue.db.schema.indexes.KeyedIndex(
                        fields=["batch_id", "status"], name="sqlqueue_job_batch"
                    ),
                    django_sqlqueue.db.schema.indexes.HiddenFinishedIndex(
                        adds_column=True,
                        fields=["queue", "status"],
                        name="sqlqueue_job_queue_status",
                        over=models.Q(("status__in", ["SUCCESSFUL", "FAILED", "CANCELLED"])),
                    ),
                    django_sqlqueue.db.schema.indexes.HiddenFinishedIndex(
                        fields=["finished_at", "status"],
                        name="sqlqueue_job_finished",
                        over=models.Q(("finished_at__isnull", False)),
                    ),
                    models.Index(fields=["enqueued_at"], name="sqlqueue_job_enqueued"),
                    django_sqlqueue.db.schema.failures.FailureIndex(name="sqlqueue_job_failed"),
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(("priority__gte", -100), ("priority__lte", 100)),
                        name="sqlqueue_job_priority_range",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("max_attempts__gte", 1)), name="sqlqueue_job_max_attempts_min"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("timeout__gt", 0)), name="sqlqueue_job_timeout_positive"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            ("status", "WAITING"),
                            ("status", "READY"),
                            ("status", "RUNNING"),
                            ("status", "SUCCESSFUL"),
                            ("status", "FAILED"),
                            ("status", "CANCELLED"),
                            _connector="OR",
                        ),
                        name="sqlqueue_job_status_valid",
                    ),
                    models.CheckConstraint(
                        condition=models.Q(("queue", ""), _negated=True), name="sqlqueue_job_queue_not_empty"
                    ),
                    models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("concurrency_key__isnull", True), ("concurrency_limit__isnull", True)),
                            models.Q(("concurrency_key__isnull", False), ("concurrency_limit__gte", 1)),
                            _connector="OR",
                        ),
                        name="sqlqueue_job_concurrency_pair",
                    ),
                    django_sqlqueue.db.schema.indexes.ActiveKeyConstraint(kept=True, name="sqlqueue_job_unique_key"),
                ],
            },
        ),
        migrations.CreateModel(
            name="JobBatch",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("description", models.CharField(blank=True, default="", max_length=255)),
                (
                    "callbacks",
                    models.JSONField(
                        blank=True,
                        default=dict,
                        help_text="on_success, on_failure, on_finish: each a task with its arguments.",
                    ),
                ),
                (
                    "total",
                    models.PositiveIntegerField(
                        default=0, help_text="The jobs enqueued in it, those added later among them."
                    ),
                ),
                (
                    "pending",
                    models.IntegerField(default=0, help_text="Its jobs whose finish has not counted down yet."),
                ),
                (
                    "succeeded_unkept",
                    models.PositiveIntegerField(
                        default=0, help_text="Its jobs that succeeded and were not kept (SQLQUEUE_RETENTION)."
                    ),
                ),
                ("created_at", models.DateTimeField(db_default=django_sqlqueue.db.clock.DatabaseNow())),
                ("finished_at", models.DateTimeField(blank=True, help_text="When its last job finished.", null=True)),
                (
                    "succeeded",
                    models.PositiveIntegerField(blank=True, help_text="Counted when it finished.", null=True),
                ),
                (
                    "failed",
                    models.PositiveIntegerField(
                        blank=True,
                        help_text="Failed, cancelled, expired or deleted jobs, counted when it finished.",
                        null=True,
                    ),
                ),
                (
                    "callback_jobs",
                    models.JSONField(
                        blank=True, default=dict, help_text="The id of each callback enqueued, or why it could not be."
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "job batches",
                "default_permissions": ("view",),
                "indexes": [models.Index(fields=["finished_at"], name="sqlqueue_batch_finished")],
            },
        ),
        migrations.CreateModel(
            name="Schedule",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "key",
                    django_sqlqueue.db.schema.names.NameField(
                        help_text="Its name: its key in SQLQUEUE_SCHEDULE, or the one given in the admin.",
                        max_length=200,
                        unique=True,
                    ),
                ),
                (
                    "defined_in",
                    models.CharField(
                        choices=[("settings", "settings"), ("admin", "admin")],
                        default="settings",
                        editable=False,
                        help_text="SQLQUEUE_SCHEDULE (read-only in the admin) or the admin.",
                        max_length=8,
                    ),
                ),
                ("task", models.CharField(max_length=255)),
                ("expression", models.CharField(help_text="A cron expression, or every N seconds.", max_length=255)),
                (
                    "cron",
                    models.CharField(
                        blank=True,
                        default="",
                        help_text="Five fields, such as 0 3 * * * (03:00 every day).",
                        max_length=255,
                    ),
                ),
                (
                    "every",
                    models.FloatField(blank=True, help_text="Seconds between ticks, instead of cron.", null=True),
                ),
                (
                    "tz",
                    models.CharField(
                        help_text="Such as Europe/Paris: cron's times are its.", max_length=64, verbose_name="time zone"
                    ),
                ),
                ("args", models.JSONField(blank=True, default=list)),
                ("kwargs", models.JSONField(blank=True, default=dict)),
                (
                    "queue",
                    django_sqlqueue.db.schema.names.NameField(
                        blank=True, default="", help_text="Empty for the task's own queue.", max_length=100
                    ),
                ),
                ("priority", models.SmallIntegerField(blank=True, null=True)),
                (
                    "missed",
                    models.CharField(
                        choices=[("skip", "skip"), ("latest", "latest"), ("all", "all")],
                        default="latest",
                        help_text="The ticks that passed while no supervisor ran: enqueue the latest, none, or all.",
                        max_length=6,
                    ),
                ),
                ("enabled", models.BooleanField(default=True)),
                (
                    "last_tick_at",
                    models.DateTimeField(help_text="Every tick up to this time is done (enqueued or skipped)."),
                ),
                ("next_tick_at", models.DateTimeField(blank=True, help_text="When it is next due.", null=True)),
                (
                    "last_run_at",
                    models.DateTimeField(blank=True, help_text="The tick of the last job it enqueued.", null=True),
                ),
                ("last_job_id", models.BigIntegerField(blank=True, null=True)),
                (
                    "recent_jobs",
                    models.JSONField(
                        blank=True, default=list, editable=False, help_text="Its last jobs' ids, newest first."
                    ),
                ),
                (
                    "revision",
                    models.PositiveIntegerField(
                        default=0, editable=False, help_text="Moves on at every write but a tick's (see the class)."
                    ),
                ),
            ],
            options={
                "permissions": [
                    ("enable_schedule", "Can enable and disable schedules"),
                    ("run_schedule_now", "Can run scheduled entries now"),
                ],
                "indexes": [models.Index(fields=["enabled", "next_tick_at"], name="sqlqueue_schedule_due")],
            },
        ),
        migrations.CreateModel(
            name="JobDependency",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                (
                    "settled",
                    models.BooleanField(default=False, help_text="The parent has finished and the child counted it."),
                ),
                (
                    "child",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="dependencies",
                        to="django_sqlqueue.job",
                    ),
                ),
                (
                    "parent",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="dependents",
                        to="django_sqlqueue.job",
                    ),
                ),
            ],
            options={
                "default_permissions": (),
                "indexes": [models.Index(fields=["settled", "parent"], name="sqlqueue_dependency_unsettled")],
                "constraints": [models.UniqueConstraint(fields=("child", "parent"), name="sqlqueue_dependency_unique")],
            },
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="JobTag",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                            ),
                        ),
                        ("tag", models.CharField(max_length=64)),
                        (
                            "job",
                            models.ForeignKey(
                                db_constraint=False,
                                on_delete=django.db.models.deletion.DO_NOTHING,
                                related_name="tag_rows",
                                to="django_sqlqueue.job",
                            ),
                        ),
                    ],
                    options={
                        "default_permissions": (),
                        "constraints": [models.UniqueConstraint(fields=("tag", "job"), name="sqlqueue_jobtag_tag_job")],
                    },
                ),
            ],
            # The table is made below, with the foreign key Django cannot declare.
            database_operations=[],
        ),
        migrations.RunPython(
            django_sqlqueue.db.schema.tag_table.create_tag_table,
            django_sqlqueue.db.schema.tag_table.delete_tag_table,
            # DDL: MariaDB cannot roll it back, and refuses it inside a transaction.
            atomic=False,
        ),
        migrations.RunPython(tune_autovacuum, untune_autovacuum, elidable=False),
        migrations.RunPython(create_notify_trigger, drop_notify_trigger, elidable=False),
    ]
