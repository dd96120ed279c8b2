"""The exact words of the claim's settings problems, which the vendor tests and the
system checks' tests both expect (a database aliased ``jobs``)."""

from __future__ import annotations

SQLITE_DEFERRED = (
    "SQLite database 'jobs' opens transactions in DEFERRED mode, so two processes claiming at once fail "
    "with 'database is locked'"
)


def mysql_isolation_problem(level: object) -> str:
    return (
        f"MySQL database 'jobs' uses isolation level {level!r}: above READ COMMITTED, InnoDB takes gap locks "
        "that make concurrent claims deadlock and stale snapshots hide new jobs"
    )
