"""Every system check id the app can report, with its level, what it reports and its
hint: ``checks`` builds each message from its entry here, and the checks reference
(``docs/reference/checks.md``) is generated from :data:`CHECK_IDS`, so the two cannot
drift. Ids are stable and never reused: a retired one stays out of this table, and its
number is never given again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from django.core import checks

from django_sqlqueue.db.engines import ENGINES
from django_sqlqueue.db.engines.mysql_charsets import CONNECTION_HINT, STRICT_HINT, TABLES_HINT
from django_sqlqueue.db.engines.postgresql import VACUUM_HINT
from django_sqlqueue.db.engines.sqlite import JOURNAL_HINT


@dataclass(frozen=True)
class CheckId:
    """One check id: ``level`` is ``checks.Error`` or ``checks.Warning``; ``reports`` says
    what its messages report (each message names the case); ``hint`` is every message's
    hint, unless the message brings one naming its case (then ``hint`` describes it)."""

    id: str
    level: type[checks.Error] | type[checks.Warning]
    reports: str
    hint: str

    def message(self, msg: str, hint: str | None = None) -> checks.CheckMessage:
        """A check message of this id's level, with this id's hint unless ``hint`` is given."""
        return self.level(msg, hint=self.hint if hint is None else hint, id=self.id)


def _by_database(hints: Mapping[str, str | None]) -> str:
    return " ".join(f"On {database}: {hint}" for database, hint in hints.items() if hint)


#: The check of each ``SQLQUEUE_*`` setting; its message is the setting's own error.
SETTING_CHECKS = {
    name: CheckId(
        f"sqlqueue.{number}",
        checks.Error,
        f"{name} holds a value the queue cannot use; the message says what is wrong with it.",
        f"See {name} in the settings reference of django-sqlqueue's documentation.",
    )
    for name, number in {
        "SQLQUEUE_QUEUES": "E001",
        "SQLQUEUE_DEFAULT_QUEUE": "E002",
        "SQLQUEUE_MAX_ATTEMPTS": "E003",
        "SQLQUEUE_TIMEOUT": "E004",
        "SQLQUEUE_RETRY_BACKOFF": "E005",
        "SQLQUEUE_RETRY_BACKOFF_MAX": "E006",
        "SQLQUEUE_BATCH_SIZE": "E007",
        "SQLQUEUE_HEARTBEAT_INTERVAL": "E012",
        "SQLQUEUE_LEASE": "E013",
        "SQLQUEUE_POLL_INTERVAL": "E014",
        "SQLQUEUE_SHUTDOWN_GRACE": "E015",
        "SQLQUEUE_RETENTION": "E017",
        "SQLQUEUE_SCHEDULE": "E018",
        "SQLQUEUE_CANCEL_GRACE": "E026",
        "SQLQUEUE_RATE_LIMITS": "E035",
        "SQLQUEUE_MIDDLEWARE": "E039",
        "SQLQUEUE_ENQUEUE_HOOKS": "E040",
        "SQLQUEUE_WAKEUP_DIR": "E041",
        "SQLQUEUE_MAX_SNOOZES": "E042",
        "SQLQUEUE_ADMIN_REFRESH": "E043",
        "SQLQUEUE_EMBEDDED": "E044",
        "SQLQUEUE_WORKER_START": "E045",
    }.items()
}
CLAIMS = CheckId(
    "sqlqueue.E010",
    checks.Error,
    "A database that may hold the jobs table is not configured for safe concurrent claims.",
    _by_database({name: each.claim_hint for name, each in ENGINES.items()}),
)
VERSION = CheckId(
    "sqlqueue.E011",
    checks.Error,
    "A database server that holds the jobs table is too old to lock rows with SKIP LOCKED.",
    "Upgrade the database server.",
)
DRIVER = CheckId(
    "sqlqueue.E016",
    checks.Error,
    "A database that may hold the jobs table is reached through a driver the queue cannot use.",
    _by_database({name: each.driver_hint for name, each in ENGINES.items()}),
)
SCHEDULE_ENTRY = CheckId(
    "sqlqueue.E019",
    checks.Error,
    "A SQLQUEUE_SCHEDULE entry names an unregistered task, or arguments or options a job cannot have.",
    "Name a registered task (its @job name) and arguments it can take as JSON.",
)
SCHEDULE_CRON = CheckId(
    "sqlqueue.E020",
    checks.Error,
    "SQLQUEUE_SCHEDULE entries use cron, which needs cronsim, and it is not installed.",
    'pip install "django-sqlqueue[cron]"',
)
METRICS_DIRECTORY = CheckId(
    "sqlqueue.E023",
    checks.Error,
    "PROMETHEUS_MULTIPROC_DIR is set to something this process cannot write as a directory.",
    "Create it (and empty it before each start), or unset it: "
    "runworkers --metrics-port then uses a directory of its own.",
)
RATE_LIMIT_NAME = CheckId(
    "sqlqueue.E036",
    checks.Error,
    "A task's @job(rate_limit=...) names a limit SQLQUEUE_RATE_LIMITS does not define.",
    "Add the limit to SQLQUEUE_RATE_LIMITS, or name one it defines (the hint lists them).",
)
SCHEDULE_ARGUMENTS = CheckId(
    "sqlqueue.E037",
    checks.Error,
    "A SQLQUEUE_SCHEDULE entry's args and kwargs do not fit its task's function.",
    "Give the entry the args and kwargs its task takes: as it is, every tick would be refused.",
)
RANGEFILTER = CheckId(
    "sqlqueue.E038",
    checks.Error,
    "Django's admin is installed without 'rangefilter' (django-admin-rangefilter), whose templates "
    "the job list's date filters render.",
    "Add 'rangefilter' to INSTALLED_APPS, e.g. next to 'django_sqlqueue'.",
)
JOURNAL = CheckId(
    "sqlqueue.W001",
    checks.Warning,
    "A SQLite database that holds the jobs table is not in WAL mode: the queue works, several times slower.",
    JOURNAL_HINT,
)
VACUUM = CheckId(
    "sqlqueue.W002",
    checks.Warning,
    "Autovacuum does not clean the jobs table of a PostgreSQL database: the queue works, slower with every job.",
    VACUUM_HINT,
)
TABLES_CHARSET = CheckId(
    "sqlqueue.W003",
    checks.Warning,
    "The queue's tables on a MySQL/MariaDB database are not in utf8mb4.",
    TABLES_HINT,
)
CONNECTION_CHARSET = CheckId(
    "sqlqueue.W004",
    checks.Warning,
    "The connection to a MySQL/MariaDB database that holds the jobs table is not in utf8mb4.",
    CONNECTION_HINT,
)
STRICT_MODE = CheckId(
    "sqlqueue.W005",
    checks.Warning,
    "A MySQL/MariaDB database that holds the jobs table is not in strict mode: it would change what it "
    "cannot store rather than refuse it.",
    STRICT_HINT,
)
JOBS_DATABASE = CheckId(
    "sqlqueue.W006",
    checks.Warning,
    "DATABASE_ROUTERS send the jobs table's writes to a database other than 'default', so "
    "transaction.atomic() does not cover enqueue().",
    "Enqueue inside transaction.atomic(using=...) of that database, or route the jobs table to 'default' "
    "(the hint names the database). Silence sqlqueue.W006 if that is what you want.",
)
UNKNOWN_SETTING = CheckId(
    "sqlqueue.W007",
    checks.Warning,
    "A SQLQUEUE_* setting is not one django-sqlqueue reads, so it is ignored (a misspelled name, say).",
    "Rename it to the setting meant (the hint names the closest, when one is close), or remove it: every "
    "setting is in the settings reference of django-sqlqueue's documentation.",
)
MIGRATED = CheckId(
    "sqlqueue.W008",
    checks.Warning,
    "The database that holds the jobs (checked with check --database, and by migrate before it migrates) "
    "does not answer, or the queue's migrations are not all applied to it: enqueues and workers would fail.",
    "Run manage.py migrate (migrate itself reports this once, before it applies them).",
)

#: Every id, in order.
CHECK_IDS: dict[str, CheckId] = {
    check.id: check
    for check in sorted(
        [
            *SETTING_CHECKS.values(),
            CLAIMS,
            VERSION,
            DRIVER,
            SCHEDULE_ENTRY,
            SCHEDULE_CRON,
            METRICS_DIRECTORY,
            RATE_LIMIT_NAME,
            SCHEDULE_ARGUMENTS,
            RANGEFILTER,
            JOURNAL,
            VACUUM,
            TABLES_CHARSET,
            CONNECTION_CHARSET,
            STRICT_MODE,
            JOBS_DATABASE,
            UNKNOWN_SETTING,
            MIGRATED,
        ],
        key=lambda check: check.id,
    )
}
