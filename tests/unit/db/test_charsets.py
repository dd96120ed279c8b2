"""What a database can store of a new job's text (``db/charsets.py``): every character
where the tables and the connection are utf8mb4 (and on PostgreSQL and SQLite), and on
MySQL/MariaDB tables or connections in latin1 or utf8mb3 an ``InvalidJobError`` naming
the field, the character and the column, with nothing written, in strict mode or not."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.models import Job
from tests.support.charsets import column_in, session_variable
from tests.support.schema import app_tables, describe
from tests.testapp.tasks import noop, per_tenant, sync_order

JOBS = Job._meta.db_table
#: A name outside latin1 (CJK) and one outside utf8mb3 (an emoji); then what latin1 holds.
OUTSIDE = {"latin1": ("レポート", "レ", "U+30EC"), "utf8mb3": ("reports 📈", "📈", "U+1F4C8")}
INSIDE = {"latin1": "répörts €", "utf8mb3": "レポート"}

mysql_only = pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB tables have character sets")


@pytest.mark.django_db
def test_every_character_is_stored_as_itself_in_utf8mb4() -> None:
    text = "répörts レポート 📈"
    job = Job.objects.enqueue(noop, queue=text, unique_key=text, concurrency_key=text, concurrency_limit=1)
    stored = Job.objects.get(pk=job.pk)
    assert (stored.queue, stored.unique_key, stored.concurrency_key) == (text, text, text)


@mysql_only
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("strict", [True, False], ids=["strict", "not-strict"])
@pytest.mark.parametrize("charset", ["latin1", "utf8mb3"])
@pytest.mark.parametrize("field", ["queue", "unique_key", "concurrency_key"])
def test_a_name_outside_a_columns_charset_is_refused_and_nothing_written(
    field: str, charset: str, strict: bool
) -> None:
    text, char, code = OUTSIDE[charset]
    options: dict[str, Any] = {field: text, **({"concurrency_limit": 1} if field == "concurrency_key" else {})}
    mode = "STRICT_TRANS_TABLES" if strict else ""
    with column_in(charset, JOBS, field), session_variable("sql_mode", mode):
        where = f"the column {JOBS}.{field}"
        problem = f"{field} {text!r} holds {char!r} ({code}), which the character set {charset} cannot store ({where};"
        refused = re.escape(f"Cannot enqueue tests.testapp.tasks.noop: {problem}")
        with pytest.raises(InvalidJobError, match=f"^{refused}"):
            Job.objects.enqueue(noop, **options)
        with pytest.raises(InvalidJobError, match=f"^{refused}"):
            Job.objects.enqueue_many([Job.objects.build(noop, queue="fine"), Job.objects.build(noop, **options)])
        assert not Job.objects.exists()
        # What the character set holds is still taken, as itself.
        stored = Job.objects.enqueue(noop, **{**options, field: INSIDE[charset]})
        assert getattr(Job.objects.get(pk=stored.pk), field) == INSIDE[charset]


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_keys_derived_from_arguments_are_checked_too() -> None:
    with column_in("latin1", JOBS, "unique_key"), column_in("latin1", JOBS, "concurrency_key"):
        with pytest.raises(InvalidJobError, match=r"^Cannot enqueue tests.testapp.tasks.sync_order: unique_key .*'レ'"):
            Job.objects.enqueue(sync_order, ["レ"])
        rows: list[tuple[Any, list[str], dict[str, Any]]] = [(per_tenant, ["fine"], {}), (per_tenant, ["レ"], {})]
        with pytest.raises(InvalidJobError, match=r"^Cannot enqueue tests.testapp.tasks.per_tenant \(row 1\): conc"):
            Job.objects.enqueue_rows(rows)
        assert not Job.objects.exists()


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_enqueue_rows_checks_the_queue_of_its_rows() -> None:
    with column_in("latin1", JOBS, "queue"):
        with pytest.raises(InvalidJobError, match=r"^Cannot enqueue tests.testapp.tasks.noop: queue 'レ' holds 'レ'"):
            Job.objects.enqueue_rows([(noop, [], {})], queue="レ")
        assert not Job.objects.exists()


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_a_connection_outside_utf8mb4_refuses_what_it_cannot_carry() -> None:
    with session_variable("character_set_client", "utf8mb3"):
        problem = "queue 'r📈' holds '📈' (U+1F4C8), which the character set utf8mb3 cannot store"
        with pytest.raises(InvalidJobError, match=re.escape(f"{problem} (this connection's character_set_client;")):
            Job.objects.enqueue(noop, queue="r📈")
        assert Job.objects.enqueue(noop, queue="répörts").queue == "répörts"
    assert list(Job.objects.values_list("queue", flat=True)) == ["répörts"]


def troubleshooting_sql() -> list[str]:
    """The SQL blocks of the troubleshooting page's character set section, in order."""
    page = (Path(__file__).resolve().parents[3] / "docs" / "troubleshooting.md").read_text()
    section = page.split("## `InvalidJobError` naming a column", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)```", section, flags=re.DOTALL)


@mysql_only
@pytest.mark.django_db(transaction=True)
def test_the_troubleshooting_pages_conversion_leaves_the_tables_as_migrate_makes_them() -> None:
    if not connection.mysql_is_mariadb:  # type: ignore[attr-defined]
        pytest.skip("the page's statements are MariaDB's; MySQL's collation is named otherwise")
    migrated = describe()
    convert, restore = troubleshooting_sql()
    with connection.cursor() as cursor:
        for table in app_tables():  # as tables made in latin1 would be
            cursor.execute(f"ALTER TABLE {table} CONVERT TO CHARACTER SET latin1")
        for table in app_tables():
            cursor.execute(convert.replace("django_sqlqueue_job", table))
        assert describe() != migrated
        cursor.execute(restore)
        for (statement,) in cursor.fetchall():
            cursor.execute(statement)
    assert describe() == migrated
