"""The system checks (``checks``): settings, database settings and server versions."""

from __future__ import annotations

import re
import types
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.db import connection, connections
from django.db.migrations.recorder import MigrationRecorder
from django.test import override_settings

from django_sqlqueue.checks import (
    check_database_charsets,
    check_database_drivers,
    check_database_journal,
    check_database_migrated,
    check_database_settings,
    check_database_vacuum,
    check_database_version,
    check_jobs_database,
    check_metrics_directory,
    check_rate_limit_names,
    check_schedule,
    check_settings,
    check_unknown_settings,
)
from django_sqlqueue.checks import ids as check_ids
from django_sqlqueue.db import migrated
from django_sqlqueue.db.engines import engine, mysql_charsets
from django_sqlqueue.db.engines.postgresql import VACUUM_HINT
from django_sqlqueue.db.engines.sqlite import JOURNAL_HINT
from django_sqlqueue.models import Job
from tests.support.charsets import column_in, session_variable
from tests.support.messages import SQLITE_DEFERRED, mysql_isolation_problem

SETTINGS_HINT = "See {} in the settings reference of django-sqlqueue's documentation."


def setting_error(message: str, check_id: str) -> checks.Error:
    """The error of a bad setting: its hint names the setting the message starts with."""
    name = re.match(r"SQLQUEUE_[A-Z_]+", message)
    assert name is not None, message
    return checks.Error(message, hint=SETTINGS_HINT.format(name[0]), id=check_id)


SQLITE_HINT = "Add 'OPTIONS': {'transaction_mode': 'IMMEDIATE'} to this database in settings.DATABASES."
MYSQL_HINT = "Remove 'isolation_level' from this database's OPTIONS, or set it to 'read committed'."


@pytest.fixture
def extra_database(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str, dict[str, Any]], None]]:
    """Add a database alias to ``connections`` for one test (``override_settings(DATABASES=...)``
    does not reach the cached connections)."""
    added: list[str] = []

    def add(alias: str, settings_dict: dict[str, Any]) -> None:
        configured = connections.configure_settings({"default": {}, alias: settings_dict})[alias]
        monkeypatch.setitem(connections.settings, alias, configured)
        added.append(alias)

    yield add
    opened = {opened.alias for opened in connections.all(initialized_only=True)}
    for alias in added:
        if alias in opened:
            connections[alias].close()
            del connections[alias]


class JobsOnDefaultOnly:
    """A router that keeps the jobs table out of every database but ``default``."""

    def allow_migrate(self, db: str, app_label: str, **hints: Any) -> bool | None:
        return db == "default" if app_label == "django_sqlqueue" else None


def test_current_settings_are_clean() -> None:
    assert check_settings() == []
    assert check_unknown_settings() == []
    assert check_database_settings() == []


@override_settings(SQLQUEUE_MAX_ATTEMPT=5, SQLQUEUE_SCHEDUEL={}, SQLQUEUE_COLOUR="blue")
def test_every_unknown_setting_is_warned_about_with_the_closest_real_one() -> None:
    warning = "{} is not a setting of django-sqlqueue, so it is ignored."
    assert check_unknown_settings() == [
        checks.Warning(warning.format("SQLQUEUE_COLOUR"), hint=check_ids.UNKNOWN_SETTING.hint, id="sqlqueue.W007"),
        checks.Warning(
            warning.format("SQLQUEUE_MAX_ATTEMPT"), hint="Did you mean SQLQUEUE_MAX_ATTEMPTS?", id="sqlqueue.W007"
        ),
        checks.Warning(warning.format("SQLQUEUE_SCHEDUEL"), hint="Did you mean SQLQUEUE_SCHEDULE?", id="sqlqueue.W007"),
    ]


@pytest.mark.django_db
def test_check_command_is_clean() -> None:
    """Clean but for the warning a PostgreSQL server without autovacuum earns (CI's has it
    off), which the tests' settings silence and its own test covers."""
    stdout = StringIO()
    call_command("check", "--database", "default", stdout=stdout)
    silenced = len(check_database_vacuum(databases=["default"]))
    assert stdout.getvalue() == f"System check identified no issues ({silenced} silenced).\n"


def test_checks_are_registered_when_django_starts() -> None:
    registered = checks.registry.registry.get_checks()
    assert {check_settings, check_database_settings, check_database_version} <= set(registered)
    # Only 'check --database' and 'migrate' ask the servers for their versions.
    assert check_database_version.tags == (checks.Tags.database,)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("overrides", "check_id", "message"),
    [
        (
            {"SQLQUEUE_DEFAULT_QUEUE": ""},
            "sqlqueue.E002",
            "SQLQUEUE_DEFAULT_QUEUE: a queue name must be a non-empty string, not ''.",
        ),
        (
            {"SQLQUEUE_QUEUES": ["mail"]},
            "sqlqueue.E002",
            "SQLQUEUE_DEFAULT_QUEUE: queue 'default' is not one of SQLQUEUE_QUEUES ['mail'].",
        ),
        (
            {"SQLQUEUE_MAX_ATTEMPTS": 0},
            "sqlqueue.E003",
            "SQLQUEUE_MAX_ATTEMPTS must be an integer of at least 1, not 0.",
        ),
        (
            {"SQLQUEUE_TIMEOUT": -1},
            "sqlqueue.E004",
            "SQLQUEUE_TIMEOUT must be a positive number of seconds, not -1.",
        ),
        (
            {"SQLQUEUE_RETRY_BACKOFF": 3601},
            "sqlqueue.E006",
            "SQLQUEUE_RETRY_BACKOFF_MAX must not be smaller than SQLQUEUE_RETRY_BACKOFF.",
        ),
        (
            {"SQLQUEUE_RETRY_BACKOFF_MAX": "1h"},
            "sqlqueue.E006",
            "SQLQUEUE_RETRY_BACKOFF_MAX must be a positive number of seconds, not '1h'.",
        ),
        (
            {"SQLQUEUE_BATCH_SIZE": 0.5},
            "sqlqueue.E007",
            "SQLQUEUE_BATCH_SIZE must be an integer of at least 1, not 0.5.",
        ),
        (
            {"SQLQUEUE_LEASE": 10},
            "sqlqueue.E013",
            "SQLQUEUE_LEASE must be at least three SQLQUEUE_HEARTBEAT_INTERVALs.",
        ),
        (
            {"SQLQUEUE_POLL_INTERVAL": 0},
            "sqlqueue.E014",
            "SQLQUEUE_POLL_INTERVAL must be a positive number of seconds, not 0.",
        ),
        (
            {"SQLQUEUE_SHUTDOWN_GRACE": None},
            "sqlqueue.E015",
            "SQLQUEUE_SHUTDOWN_GRACE must be a positive number of seconds, not None.",
        ),
        (
            {"SQLQUEUE_RETENTION": {"FAILED": True}},
            "sqlqueue.E017",
            "SQLQUEUE_RETENTION['FAILED'] must be seconds, a timedelta or None, not True.",
        ),
        (
            {"SQLQUEUE_SCHEDULE": {"ping": {"task": "t", "every": 5, "cron": "* * * * *"}}},
            "sqlqueue.E018",
            "SQLQUEUE_SCHEDULE['ping'] must have exactly one of 'cron' and 'every'.",
        ),
        (
            {"SQLQUEUE_SCHEDULE": {"ping": {"task": "t"}}},
            "sqlqueue.E018",
            "SQLQUEUE_SCHEDULE['ping'] must have exactly one of 'cron' and 'every'.",
        ),
        (
            {"SQLQUEUE_SCHEDULE": {"ping": {"task": "t", "cron": "* * * * 9"}}},
            "sqlqueue.E018",
            "SQLQUEUE_SCHEDULE['ping']: cron '* * * * 9' is not valid: Bad day-of-week.",
        ),
        (
            {"SQLQUEUE_SCHEDULE": {"ping": {"task": "t", "every": 5, "tz": "Europe/Pariss"}}},
            "sqlqueue.E018",
            "SQLQUEUE_SCHEDULE['ping']: 'Europe/Pariss' is not a time zone name, such as 'Europe/Paris'.",
        ),
        (
            {"SQLQUEUE_SCHEDULE": {"ping": {"task": "t", "every": 5, "kwarg": {}}}},
            "sqlqueue.E018",
            "SQLQUEUE_SCHEDULE['ping'] has unknown keys ['kwarg']; use ['args', 'cron', 'enabled', 'every', "
            "'kwargs', 'missed', 'priority', 'queue', 'task', 'tz'].",
        ),
        (
            {"SQLQUEUE_CANCEL_GRACE": -1},
            "sqlqueue.E026",
            "SQLQUEUE_CANCEL_GRACE must be a positive number of seconds, not -1.",
        ),
        (
            {"SQLQUEUE_RATE_LIMITS": {"test-rate": "20 per second"}},
            "sqlqueue.E035",
            "SQLQUEUE_RATE_LIMITS: rate limit 'test-rate' must read like '25/s', '100/m' or '1000/h burst 5', "
            "not '20 per second'.",
        ),
        (
            {"SQLQUEUE_EMBEDDED": {"queue": ["mail"]}},
            "sqlqueue.E044",
            "SQLQUEUE_EMBEDDED: unknown keys ['queue']: only ['queues', 'threads'] are read.",
        ),
        (
            {"SQLQUEUE_WORKER_START": "forkserver"},
            "sqlqueue.E045",
            "SQLQUEUE_WORKER_START must be 'fork' or 'spawn', not 'forkserver'.",
        ),
    ],
    ids=[
        "E002-empty",
        "E002-not-allowed",
        "E003",
        "E004",
        "E006-below-backoff",
        "E006-str",
        "E007",
        "E013",
        "E014",
        "E015",
        "E017",
        "E018-both",
        "E018-neither",
        "E018-expression",
        "E018-tz",
        "E018-key",
        "E026",
        "E035",
        "E044",
        "E045",
    ],
)
def test_bad_setting_is_one_error(overrides: dict[str, Any], check_id: str, message: str) -> None:
    with override_settings(**overrides):
        errors = check_settings()
    assert errors == [setting_error(message, check_id)]


@pytest.mark.parametrize(
    ("overrides", "check_id", "message"),
    [
        (
            {"SQLQUEUE_QUEUES": []},
            "sqlqueue.E001",
            "SQLQUEUE_QUEUES is empty: no job could ever be enqueued. Use None to allow any queue.",
        ),
        (
            {"SQLQUEUE_QUEUES": "mail"},
            "sqlqueue.E001",
            "SQLQUEUE_QUEUES must be a list of queue names or None, not 'mail'.",
        ),
        (
            {"SQLQUEUE_RETRY_BACKOFF": 0},
            "sqlqueue.E005",
            "SQLQUEUE_RETRY_BACKOFF must be a positive number of seconds, not 0.",
        ),
        (
            {"SQLQUEUE_HEARTBEAT_INTERVAL": -5},
            "sqlqueue.E012",
            "SQLQUEUE_HEARTBEAT_INTERVAL must be a positive number of seconds, not -5.",
        ),
    ],
    ids=["E001-empty", "E001-str", "E005", "E012"],
)
def test_bad_setting_is_reported_once(overrides: dict[str, Any], check_id: str, message: str) -> None:
    """A setting that another setting's validation reads must not be reported again under that
    other setting's id (E002, E006, E013), which names a setting the user got right."""
    with override_settings(**overrides):
        errors = check_settings()
    assert errors == [setting_error(message, check_id)]


def test_every_bad_setting_is_reported() -> None:
    with override_settings(SQLQUEUE_MAX_ATTEMPTS=0, SQLQUEUE_TIMEOUT=0, SQLQUEUE_BATCH_SIZE=0):
        errors = check_settings()
    assert [error.id for error in errors] == ["sqlqueue.E003", "sqlqueue.E004", "sqlqueue.E007"]


def test_check_database_settings_reports_an_unsafe_sqlite_database(
    extra_database: Callable[[str, dict[str, Any]], None],
) -> None:
    extra_database("jobs", {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"})
    assert check_database_settings() == [checks.Error(f"{SQLITE_DEFERRED}.", hint=SQLITE_HINT, id="sqlqueue.E010")]


@pytest.mark.usefixtures("mysql_backend")
def test_check_database_settings_reports_an_unsafe_mysql_database(
    extra_database: Callable[[str, dict[str, Any]], None],
) -> None:
    extra_database(
        "jobs",
        {"ENGINE": "django.db.backends.mysql", "NAME": "jobs", "OPTIONS": {"isolation_level": "repeatable read"}},
    )
    assert check_database_settings() == [
        checks.Error(f"{mysql_isolation_problem('repeatable read')}.", hint=MYSQL_HINT, id="sqlqueue.E010")
    ]


def test_database_without_the_jobs_table_is_not_checked(
    extra_database: Callable[[str, dict[str, Any]], None],
) -> None:
    extra_database("jobs", {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"})
    with override_settings(DATABASE_ROUTERS=[f"{__name__}.JobsOnDefaultOnly"]):
        assert check_database_settings() == []


def test_installed_drivers_are_supported() -> None:
    assert check_database_drivers() == []


def test_check_database_drivers_reports_an_old_sqlite(
    extra_database: Callable[[str, dict[str, Any]], None],
) -> None:
    extra_database(
        "jobs",
        {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:", "OPTIONS": {"transaction_mode": "IMMEDIATE"}},
    )
    connections["jobs"].__dict__["Database"] = types.SimpleNamespace(
        sqlite_version="3.31.1", sqlite_version_info=(3, 31, 1)
    )
    assert check_database_drivers() == [
        checks.Error(
            "SQLite database 'jobs' runs on SQLite 3.31.1, which has no UPDATE ... RETURNING; "
            "django-sqlqueue needs SQLite 3.35 or newer.",
            hint="Run on a Python linked with a newer SQLite, or on PostgreSQL or MySQL.",
            id="sqlqueue.E016",
        )
    ]


@pytest.mark.django_db
def test_running_server_version_is_supported() -> None:
    assert engine(connections["default"]).version_problem() is None
    assert check_database_version(databases=["default"]) == []
    # The tests' SQLite database is in WAL mode, as the README's settings put it.
    assert check_database_journal(databases=["default"]) == []


def test_version_is_checked_only_for_the_databases_django_asks_about() -> None:
    assert check_database_version(databases=None) == []


@pytest.mark.django_db
@pytest.mark.usefixtures("mysql_server")
def test_check_database_version_reports_an_old_mariadb(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(connections["default"].__dict__, "mysql_version", (10, 5, 26))
    assert check_database_version(databases=["default"]) == [
        checks.Error(
            "MariaDB 10.5.26 has no SELECT ... SKIP LOCKED; django-sqlqueue needs MariaDB 10.6 or newer "
            "(10.11+ is tested).",
            hint="Upgrade the database server.",
            id="sqlqueue.E011",
        )
    ]


@pytest.mark.django_db
def test_the_jobs_database_without_the_queues_migrations_is_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked with ``check --database default``; the database's rows of applied
    migrations are the test's transaction's, rolled back after."""
    assert check_database_migrated(databases=["default"]) == []
    applied = MigrationRecorder.Migration.objects.filter(app="django_sqlqueue").order_by("id")
    last = applied.last()
    assert last is not None
    last.delete()
    assert check_database_migrated(databases=None) == []
    assert check_database_migrated(databases=["default"]) == [
        checks.Warning(
            f"The queue's migrations are not applied ({last.name}): run manage.py migrate.",
            hint=check_ids.MIGRATED.hint,
            id="sqlqueue.W008",
        )
    ]
    # A database that lacks many (after releases to come) is told their number, first and last.
    many = [f"{number:04}_step" for number in range(1, 9)]
    monkeypatch.setattr(migrated, "unapplied_migrations", lambda: many)
    [warning] = check_database_migrated(databases=["default"])
    assert warning.msg == "The queue's migrations are not applied (8: 0001_step to 0008_step): run manage.py migrate."
    monkeypatch.undo()
    stderr = StringIO()
    call_command("check", "--database", "default", stdout=StringIO(), stderr=stderr)
    assert "sqlqueue.W008" in stderr.getvalue()


def test_a_sqlite_database_outside_wal_mode_is_warned_about(
    extra_database: Callable[[str, dict[str, Any]], None], tmp_path: Any, django_db_blocker: Any
) -> None:
    # Django's default for a new file: a rollback journal.
    extra_database("rollback", {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "rollback.sqlite3")})
    extra_database("memory", {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"})
    with django_db_blocker.unblock():  # neither is a test database: pytest-django knows nothing of them
        assert check_database_journal(databases=["rollback", "memory"]) == [
            checks.Warning(
                "SQLite database 'rollback' is in journal_mode delete, not WAL: claims and finishes block readers.",
                hint=JOURNAL_HINT,
                id="sqlqueue.W001",
            )
        ]
        with connections["rollback"].cursor() as cursor:
            cursor.execute("PRAGMA journal_mode=WAL")
        assert check_database_journal(databases=["rollback"]) == []
    assert check_database_journal(databases=None) == []


@pytest.mark.django_db
def test_a_postgresql_server_or_jobs_table_without_autovacuum_is_warned_about() -> None:
    """The server's setting is whatever the machine runs (CI's has autovacuum off); the
    table's option is set here, inside the test's transaction."""
    if connection.vendor != "postgresql":
        assert check_database_vacuum(databases=["default"]) == []
        return
    table = Job._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('autovacuum')")
        (server,) = cursor.fetchone()
    if server == "on":
        assert check_database_vacuum(databases=["default"]) == []
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        problem = f"has autovacuum_enabled=false on {table}: the dead rows every claim and finish leaves pile up"
    else:
        problem = f"runs with autovacuum off: the dead rows every claim and finish leaves in {table} pile up"
    assert check_database_vacuum(databases=["default"]) == [
        checks.Warning(f"PostgreSQL database 'default' {problem}.", hint=VACUUM_HINT, id="sqlqueue.W002")
    ]
    assert check_database_vacuum(databases=None) == []


@pytest.mark.django_db
def test_the_test_databases_store_every_name() -> None:
    """utf8mb4 tables and connection, and strict mode, on the suite's MariaDB; nothing to
    say elsewhere."""
    assert check_database_charsets(databases=["default"]) == []


@pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB have character sets and sql_mode")
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("charset", ["latin1", "utf8mb3"])
def test_mysql_tables_connections_and_modes_that_change_names_are_warned_about(charset: str) -> None:
    table = Job._meta.db_table
    with column_in(charset, table, "task"):
        [warning] = check_database_charsets(databases=["default"])
    assert warning == checks.Warning(
        "MySQL database 'default' has text columns of the queue's tables in a character set other than utf8mb4, "
        f"which cannot store every queue name and key: {table}.task ({charset}).",
        hint=mysql_charsets.TABLES_HINT,
        id="sqlqueue.W003",
    )
    with session_variable("character_set_client", charset), session_variable("character_set_connection", charset):
        [warning] = check_database_charsets(databases=["default"])
    assert warning == checks.Warning(
        f"MySQL database 'default' is connected with character_set_client {charset}, "
        f"character_set_connection {charset}, not utf8mb4.",
        hint=mysql_charsets.CONNECTION_HINT,
        id="sqlqueue.W004",
    )
    with session_variable("sql_mode", "NO_ENGINE_SUBSTITUTION"):
        [warning] = check_database_charsets(databases=["default"])
    assert warning == checks.Warning(
        "MySQL database 'default' runs without strict mode (sql_mode 'NO_ENGINE_SUBSTITUTION'): text and values "
        "it cannot store are changed (? for a character, a name cut short) rather than refused.",
        hint=mysql_charsets.STRICT_HINT,
        id="sqlqueue.W005",
    )
    assert check_database_charsets(databases=None) == []


@pytest.mark.django_db
def test_queue_commands_run_the_checks_that_ask_the_database(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(type(engine(connections["default"])), "journal_problem", lambda self: "Slow")
    stderr = StringIO()
    call_command("sqlqueue_stats", "--json", skip_checks=False, stdout=StringIO(), stderr=stderr)
    assert "(sqlqueue.W001) Slow." in stderr.getvalue()


NOOP = "tests.testapp.tasks.noop"


def test_a_schedule_of_registered_tasks_is_clean() -> None:
    with override_settings(
        SQLQUEUE_SCHEDULE={"ping": {"task": NOOP, "every": 5}, "cron": {"task": NOOP, "cron": "0 3 * * *"}}
    ):
        assert check_schedule() == []


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({"task": "shop.tasks.gone", "every": 5}, "No task is registered as 'shop.tasks.gone'."),
        ({"task": NOOP, "every": 5, "priority": 1000}, "priority must be an integer from -100 to 100, not 1000"),
        ({"task": NOOP, "every": 5, "kwargs": {"when": 1j}}, "kwargs"),
    ],
    ids=["unknown-task", "priority", "not-json"],
)
def test_a_schedule_that_cannot_enqueue_is_refused(entry: dict[str, Any], problem: str) -> None:
    with override_settings(SQLQUEUE_SCHEDULE={"report": entry}):
        (error,) = check_schedule()
    assert error.id == "sqlqueue.E019"
    assert error.msg.startswith(f"SQLQUEUE_SCHEDULE['report'] cannot enqueue {entry['task']!r}: ")
    assert problem in error.msg


def test_a_schedule_whose_arguments_the_task_cannot_take_is_an_error() -> None:
    schedule = {"welcome": {"task": "tests.testapp.tasks.send_welcome", "cron": "0 3 * * *", "args": ["x", "y"]}}
    with override_settings(SQLQUEUE_SCHEDULE=schedule):
        errors = check_schedule()
    assert errors == [
        checks.Error(
            "SQLQUEUE_SCHEDULE['welcome'] cannot enqueue 'tests.testapp.tasks.send_welcome': its arguments do not "
            "fit send_welcome(user_id, *, greeting='Hello'): 2 positional arguments given, but it takes 1 (user_id).",
            hint="Give the entry the args and kwargs its task takes: as it is, every tick would be refused.",
            id="sqlqueue.E037",
        )
    ]
    # At `manage.py check`, not at 3 a.m.
    with override_settings(SQLQUEUE_SCHEDULE=schedule), pytest.raises(SystemCheckError, match=r"sqlqueue\.E037"):
        call_command("check", stdout=StringIO(), stderr=StringIO())


def test_cron_entries_without_cronsim_say_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("django_sqlqueue.checks.cronsim_installed", lambda: False)
    schedule = {"nightly": {"task": NOOP, "cron": "0 3 * * *"}, "ping": {"task": NOOP, "every": 5}}
    with override_settings(SQLQUEUE_SCHEDULE=schedule):
        errors = check_schedule()
    assert errors == [
        checks.Error(
            "SQLQUEUE_SCHEDULE entries ['nightly'] use cron, which needs cronsim, and it is not installed.",
            hint='pip install "django-sqlqueue[cron]"',
            id="sqlqueue.E020",
        )
    ]
    with override_settings(SQLQUEUE_SCHEDULE={"ping": {"task": NOOP, "every": 5}}):
        assert check_schedule() == []


def test_a_metrics_directory_that_is_not_there_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    assert check_metrics_directory() == []
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    assert check_metrics_directory() == []
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "gone"))
    (error,) = check_metrics_directory()
    assert (error.id, error.msg) == (
        "sqlqueue.E023",
        f"PROMETHEUS_MULTIPROC_DIR is {str(tmp_path / 'gone')!r}, which is not a directory this process can write.",
    )
    assert check_metrics_directory in set(checks.registry.registry.get_checks())  # type: ignore[comparison-overlap]


def test_a_task_naming_an_undefined_rate_limit_is_an_error() -> None:
    assert check_rate_limit_names() == []
    with override_settings(SQLQUEUE_RATE_LIMITS={"payments": "25/s"}):
        errors = check_rate_limit_names()
    assert errors == [
        checks.Error(
            "Task 'tests.testapp.tasks.paced' has rate_limit='test-rate', which SQLQUEUE_RATE_LIMITS does not define.",
            hint="Add 'test-rate' to SQLQUEUE_RATE_LIMITS (e.g. {'test-rate': '25/s'}), or name one of ['payments'].",
            id="sqlqueue.E036",
        )
    ]
    with override_settings(SQLQUEUE_RATE_LIMITS="25/s"):
        assert check_rate_limit_names() == []  # E035's to report


def test_jobs_routed_away_from_default_are_a_warning_that_atomic_does_not_cover_them() -> None:
    """Issue 36: with the jobs table on another alias, ``transaction.atomic()`` on
    ``default`` does not cover ``enqueue``; nothing said so."""
    assert check_jobs_database() == []
    with override_settings(DATABASE_ROUTERS=["tests.support.routers.QueueElsewhere"]):
        assert check_jobs_database() == [
            checks.Warning(
                "DATABASE_ROUTERS send the jobs table's writes to the database 'replica', not 'default': "
                "transaction.atomic() does not cover enqueue(), so a job stays enqueued when the rest of "
                "that transaction rolls back.",
                hint="Enqueue inside transaction.atomic(using='replica'), which commits apart from 'default' "
                "(no transaction spans two databases), or route the jobs table to 'default'. "
                "Silence sqlqueue.W006 if that is what you want.",
                id="sqlqueue.W006",
            )
        ]
    registered: list[Any] = checks.registry.registry.get_checks()
    assert check_jobs_database in registered


def test_the_admin_without_rangefilter_is_an_error() -> None:
    """Not a 500 ``TemplateDoesNotExist`` on the job list: ``manage.py check`` says what to add."""
    without = [app for app in settings.INSTALLED_APPS if app != "rangefilter"]
    assert without != settings.INSTALLED_APPS
    with override_settings(INSTALLED_APPS=without), pytest.raises(SystemCheckError) as excinfo:
        call_command("check", stdout=StringIO(), stderr=StringIO())
    assert (
        "(sqlqueue.E038) The jobs' admin needs 'rangefilter' (django-admin-rangefilter) in INSTALLED_APPS: the "
        "job list's date filters render its templates.\n\tHINT: Add 'rangefilter' to INSTALLED_APPS, e.g. next to "
        "'django_sqlqueue'." in str(excinfo.value)
    )
    # Without the admin, nothing renders the job list.
    no_admin = [app for app in without if app != "django.contrib.admin"]
    with override_settings(INSTALLED_APPS=no_admin):
        assert "sqlqueue.E038" not in {message.id for message in checks.run_checks()}
