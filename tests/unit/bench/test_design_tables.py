"""``bench/design_tables``: each design's scratch tables are today's table changed in its one way,
and go when the drain is done."""

from __future__ import annotations

import pytest
from django.db import connection

from django_sqlqueue.bench.design_tables import DESIGNS, scratch, unsupported
from django_sqlqueue.bench.raw import RawDatabase, jobs_table


def index_sql(table: str) -> dict[str, str]:
    """``table``'s indexes, each by the end of its name, with what defines it."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = %s", [table])
        elif connection.vendor == "sqlite":
            cursor.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = %s", [table])
        else:
            cursor.execute(
                "SELECT index_name, GROUP_CONCAT(column_name ORDER BY seq_in_index) FROM information_schema.statistics "
                "WHERE table_schema = DATABASE() AND table_name = %s GROUP BY index_name",
                [table],
            )
        return {name.removeprefix(table): sql or "" for name, sql in cursor.fetchall()}


def tables() -> list[str]:
    with connection.cursor() as cursor:
        return [name for name in connection.introspection.table_names(cursor) if "sqlqueue_bench" in name]


@pytest.mark.django_db(transaction=True)
def test_the_partial_design_keeps_the_admins_indexes_to_finished_jobs() -> None:
    raw = RawDatabase.of(connection, jobs_table("unused"))
    with scratch("partial", connection, raw) as design:
        indexes = index_sql(design.table.name)
    assert tables() == []
    for admin in ("_queue_status", "_finished", "_enqueued"):
        if connection.vendor == "mysql":
            if admin != "_enqueued":  # no claim or finish changes enqueued_at: left as it is
                assert "finished_status" in indexes[admin], indexes[admin]
        else:
            assert " WHERE " in indexes[admin], indexes[admin]
            assert all(status in indexes[admin] for status in ("'SUCCESSFUL'", "'FAILED'", "'CANCELLED'"))
    assert {"_ready", "_ready_queue", "_running", "_failed"} <= set(indexes)  # the others as they are


@pytest.mark.parametrize("design", list(DESIGNS))
@pytest.mark.django_db(transaction=True)
def test_each_design_takes_a_job_through_claim_and_finish(design: str) -> None:
    if why := unsupported(design, connection):
        pytest.skip(why)
    raw = RawDatabase.of(connection, jobs_table("unused"))
    with scratch(design, connection, raw) as database, database.connect() as driver:
        cursor = driver.cursor()
        database.begin(driver)
        database.insert(cursor, "q", 3)
        database.commit(driver)
        claim, finish = database.claim_and_finish(driver, "q", 2, "w")
        ids, lost = claim()
        finish(ids)
        assert (len(ids), lost) == (2, 0)
        assert claim()[0] not in ([], ids)
    assert tables() == []
