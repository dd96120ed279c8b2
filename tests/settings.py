"""The settings the tests run with, in the test process and in every process they start:
the demo project's (``testproject.settings``) plus the tests' own apps.

- ``tests.testapp``: the ``@job`` tasks the tests enqueue and the ``Receipt`` model.
- ``tests.djtasks``: Django Tasks ``@task`` functions (Django 6.0+, or the django-tasks
  backport on Django 5.2).
- A ``replica`` database: a read-only connection to the same database, or to the
  multi-host suite's streaming standby (``DB_REPLICA_HOST``), read through the router.

The worker tests shorten the queue's clocks for the processes they start through the
environment (``tests.support.workers.FAST_CLOCKS``)."""

from __future__ import annotations

import json
import os
import re
from importlib.util import find_spec
from typing import Any

import django

from testproject.settings import *  # noqa: F403
from testproject.settings import DATABASES, INSTALLED_APPS

INSTALLED_APPS = [
    *INSTALLED_APPS,
    "tests.testapp",
    *(["tests.djtasks"] if django.VERSION >= (6, 0) or find_spec("django_tasks") else []),
]

for _name in (
    "SQLQUEUE_RETRY_BACKOFF",
    "SQLQUEUE_RETRY_BACKOFF_MAX",
    "SQLQUEUE_HEARTBEAT_INTERVAL",
    "SQLQUEUE_LEASE",
    "SQLQUEUE_POLL_INTERVAL",
    "SQLQUEUE_SHUTDOWN_GRACE",
    "SQLQUEUE_CANCEL_GRACE",
):
    if _name in os.environ:
        globals()[_name] = float(os.environ[_name])
# A JSON object of status to seconds (or null), for the pruning tests' workers.
if "SQLQUEUE_RETENTION" in os.environ:
    SQLQUEUE_RETENTION = json.loads(os.environ["SQLQUEUE_RETENTION"])
# The connection tests' workers run with Django's default 0, as most projects' do.
# Behind PgBouncer in transaction pooling mode (the multi-host suite), as Django asks.
if os.environ.get("DB_PGBOUNCER"):
    DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
if "CONN_MAX_AGE" in os.environ:
    DATABASES["default"]["CONN_MAX_AGE"] = int(os.environ["CONN_MAX_AGE"])
# More of the database's OPTIONS, as a JSON object: {"pool": true}, say, for Django's
# connection pool on PostgreSQL, as a project that pools its web processes' connections.
if "DB_OPTIONS" in os.environ:
    DATABASES["default"]["OPTIONS"] = {
        **DATABASES["default"].get("OPTIONS", {}),
        **json.loads(os.environ["DB_OPTIONS"]),
    }

# The rate limit of tests.testapp.tasks.paced; the rate limit tests' workers pass their own.
# The CI machine's PostgreSQL runs with autovacuum off, which sqlqueue.W002 rightly warns
# about in every command's output; the warning's own test calls its check directly.
SILENCED_SYSTEM_CHECKS = ["sqlqueue.W002"]
SQLQUEUE_RATE_LIMITS = json.loads(os.environ.get("SQLQUEUE_RATE_LIMITS", '{"test-rate": "20/s"}'))

# A JSON list of dotted paths, for the middleware tests' workers.
if "SQLQUEUE_MIDDLEWARE" in os.environ:
    SQLQUEUE_MIDDLEWARE = json.loads(os.environ["SQLQUEUE_MIDDLEWARE"])

# A JSON list of dotted paths, for the workers of the tests of a raising enqueue hook.
if "SQLQUEUE_ENQUEUE_HOOKS" in os.environ:
    SQLQUEUE_ENQUEUE_HOOKS = json.loads(os.environ["SQLQUEUE_ENQUEUE_HOOKS"])

# A wake-up folder of the test's own, for the workers of the tests that break it.
# How runworkers starts its processes, for the tests of the one that is not the default.
if "SQLQUEUE_WORKER_START" in os.environ:
    SQLQUEUE_WORKER_START = os.environ["SQLQUEUE_WORKER_START"]

if "SQLQUEUE_WAKEUP_DIR" in os.environ:
    SQLQUEUE_WAKEUP_DIR = os.environ["SQLQUEUE_WAKEUP_DIR"]

# A JSON object, for the embedded workers of the web servers the embedded tests start.
if "SQLQUEUE_EMBEDDED" in os.environ:
    SQLQUEUE_EMBEDDED = json.loads(os.environ["SQLQUEUE_EMBEDDED"])

# A JSON object of recurring jobs, for the schedule tests' workers.
if "SQLQUEUE_SCHEDULE" in os.environ:
    SQLQUEUE_SCHEDULE = json.loads(os.environ["SQLQUEUE_SCHEDULE"])


# tox runs its environments side by side (.ci/run): unless DB_TEST_NAME says otherwise,
# each gets a test database of its own, named after it (its folder's, for SQLite).
if "TOX_ENV_NAME" in os.environ and "DB_TEST_NAME" not in os.environ:
    DATABASES["default"].setdefault("TEST", {})["NAME"] = (
        os.path.join(os.environ["TOX_ENV_DIR"], "test_db.sqlite3")
        if DATABASES["default"]["ENGINE"].endswith("sqlite3")
        else "test_sqlqueue_" + re.sub(r"\W", "_", os.environ["TOX_ENV_NAME"])
    )


def _read_only(primary: dict[str, Any]) -> dict[str, Any]:
    """A read-only connection to ``primary``'s database: a faithful replica for the
    routing tests, where a write that strays to it fails."""
    options = dict(primary.get("OPTIONS", {}))
    engine = primary["ENGINE"]
    if engine.endswith("sqlite3"):
        options["init_command"] = options.get("init_command", "") + "PRAGMA query_only=1;"
    elif engine.endswith("postgresql"):
        options["options"] = "-c default_transaction_read_only=on"
    else:
        options["init_command"] = "SET SESSION TRANSACTION READ ONLY"
    # In the tests it points at the test database too.
    return {**primary, "OPTIONS": options, "TEST": {"MIRROR": "default"}}


# Only the routing tests read from it, with tests.support.routers.PrimaryReplicaRouter.
DATABASES = {**DATABASES, "replica": _read_only(DATABASES["default"])}
DATABASE_ROUTERS = ["tests.support.routers.ReplicaNeverMigrated"]
# The multi-host suite's streaming standby: the replica is that server, and every
# process reads there through the usual router.
if "DB_REPLICA_HOST" in os.environ:
    DATABASES["replica"].update(HOST=os.environ["DB_REPLICA_HOST"], PORT=os.environ["DB_REPLICA_PORT"])
    DATABASE_ROUTERS = ["tests.support.routers.PrimaryReplicaRouter"]
