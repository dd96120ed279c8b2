"""``bench/raw``: the bare driver reaches the database as the project does, and reads
the queue's own clock."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, connections

from django_sqlqueue.bench import ceiling
from django_sqlqueue.bench.raw import RawDatabase, jobs_table
from django_sqlqueue.db.clock import database_now
from django_sqlqueue.models import Job, JobStatus


@pytest.mark.skipif(connection.vendor == "sqlite", reason="a SQLite database is its file's name")
@pytest.mark.django_db
def test_the_raw_side_connects_as_the_project_does(tmp_path: Path) -> None:
    # Reached through the settings' OPTIONS alone: a MySQL option file naming the database
    # (as Django's docs suggest), a PostgreSQL session setting. The raw side read NAME,
    # HOST, PORT, USER and PASSWORD only: 'No database selected' on MySQL.
    config = {**connection.settings_dict, "OPTIONS": {**connection.settings_dict["OPTIONS"]}}
    if connection.vendor == "mysql":
        option_file = tmp_path / "my.cnf"
        option_file.write_text(f"[client]\ndatabase = {config['NAME']}\n")
        config["NAME"] = ""
        config["OPTIONS"]["read_default_file"] = str(option_file)
        question, expected = "SELECT DATABASE()", connection.settings_dict["NAME"]
    else:
        config["OPTIONS"]["options"] = "-c application_name=sqlqueue-bench-raw"
        question, expected = "SELECT current_setting('application_name')", "sqlqueue-bench-raw"
    project_connection = type(connections[DEFAULT_DB_ALIAS])(config, alias="bench-raw")
    raw = RawDatabase.of(project_connection, jobs_table("jobs"))
    with raw.connect() as driver_connection:
        cursor = driver_connection.cursor()
        cursor.execute(question)
        assert cursor.fetchone()[0] == expected


@pytest.mark.skipif(connection.vendor == "postgresql", reason="PostgreSQL stores instants: its clock has no zone")
@pytest.mark.django_db
def test_the_raw_clock_is_the_queues_own_without_use_tz(settings: Any) -> None:
    # It read CURRENT_TIMESTAMP (the server's zone) on MySQL and SQLite's UTC 'now', where
    # the app stores the wall-clock time of TIME_ZONE: raw rows came due hours off.
    settings.USE_TZ, settings.TIME_ZONE = False, "Pacific/Kiritimati"  # UTC+14
    raw = RawDatabase.of(connection, jobs_table("jobs"))
    with raw.connect() as driver_connection:
        cursor = driver_connection.cursor()
        cursor.execute(f"SELECT {raw.now}")
        (raw_now,) = cursor.fetchone()
    if isinstance(raw_now, str):  # SQLite's text
        raw_now = datetime.datetime.fromisoformat(raw_now)
    assert abs(raw_now - database_now(DEFAULT_DB_ALIAS)) < datetime.timedelta(seconds=5)


@pytest.mark.django_db(transaction=True)
def test_the_finished_backlog_is_written_as_jobs_that_succeeded_not_updated_after() -> None:
    table = connection.ops.quote_name(Job._meta.db_table)
    ceiling.insert_many_per_statement(RawDatabase.of(connection, jobs_table(table, succeeded=True)), "done", 3)
    ceiling.insert_many_per_statement(RawDatabase.of(connection, jobs_table(table)), "ready", 2)
    rows = Job.objects.order_by("pk").values_list("queue", "status", "finished_at")
    assert [(queue, status, finished is not None) for queue, status, finished in rows] == [
        *[("done", JobStatus.SUCCESSFUL, True)] * 3,
        *[("ready", JobStatus.READY, False)] * 2,
    ]
