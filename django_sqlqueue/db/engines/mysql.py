"""MySQL and MariaDB, through mysqlclient: their errors by number, the isolation level
a safe claim needs, and the oldest MariaDB with ``SKIP LOCKED``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import models
from django.db.models import QuerySet
from django.db.models.expressions import RawSQL

from django_sqlqueue.db.engines import mysql_charsets, mysql_packets
from django_sqlqueue.db.engines.base import Engine, ErrorCodes, KeyIndex, MarkedInsert, Model, ServerConnections, dotted
from django_sqlqueue.db.engines.claims import ClaimSteps
from django_sqlqueue.db.engines.mysql_literals import Literals
from django_sqlqueue.db.engines.zones import local_clock

MARIADB_MIN_VERSION = (10, 6)


class CandidateWindow:
    """How many candidates a MySQL/MariaDB claim reads for each job it wants.

    Its candidates are read before they are locked, so claimers that read at once read
    the same first ones: one locks them, and the others found nothing to lock and read
    again, while the winner waited for a CPU they spun on (with several worker
    processes to each core, they drained a fraction of what one to a core did). After a
    claim lost candidates to another worker, the next reads twice as many, up to
    :attr:`MOST` times, and locks the first it can of them by id: claimers at once take
    different jobs among the first ones in claim order. Each claim that lost none reads
    half as many, down to what it wants, which it then takes in claim order.

    The benchmark's raw claim (``bench/raw``) uses it too, in processes that never set
    Django up."""

    #: The most candidates read for each job wanted.
    MOST = 8

    def __init__(self, model: object = None, connection: object = None) -> None:
        # Made per connection (by its engine): the model and connection name its claimer.
        self.per_job = 1

    def lost(self, ids: list[int], taken: list[int], limit: int) -> int:
        """How many of the candidates ``ids`` another worker took first, when this claim
        locked ``taken`` of them (``limit`` at most, the lowest ids it could): all it did
        not lock when it got fewer than ``limit``, else those below the highest it got.
        The window follows: wider after a loss, narrower after none."""
        if len(taken) < limit:
            lost = len(ids) - len(taken)
        else:
            highest = max(taken)
            lost = sum(1 for pk in ids if pk <= highest) - len(taken)
        if not lost:
            self.per_job = max(self.per_job // 2, 1)
        elif len(taken) < limit:
            self.per_job = min(self.per_job * 2, self.MOST)
        return lost


class MySQL(Engine):
    vendor = "mysql"
    display = "MySQL"
    codes = ErrorCodes(
        # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
        transient=frozenset({1213, 1205}),
        unavailable=frozenset(
            {
                *(2002, 2003, 2006, 2013, 2055),  # client: cannot connect, gone away, lost connection
                *(1040, 1053, 1077, 1152, 1158, 1159, 1160, 1161, 1184),  # too many connections, shutdown, network
                *(1927, 4031, 1317, 1969, 3024),  # killed, idle timeout, query interrupted, statement time limits
                *(1290, 1792, 1836),  # read-only (after a failover)
                *(1021, 1114),  # disk or table full
            }
        ),
        unwritable=frozenset(
            {
                1153,  # ER_NET_PACKET_TOO_LARGE: larger than max_allowed_packet
                1301,  # ER_WARN_ALLOWED_PACKET_OVERFLOWED
                *(1264, 1690),  # out of range
                *(1292, 1366, 1367, 1406),  # incorrect or too long a value
                *(3140, 4025, 3819),  # invalid JSON (MySQL), a failed CHECK such as MariaDB's JSON_VALID
            }
        ),
        # ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR.
        unmigrated=frozenset({1146, 1054}),
    )
    claim_hint = "Remove 'isolation_level' from this database's OPTIONS, or set it to 'read committed'."

    @classmethod
    def raised(cls, cause: BaseException) -> bool:
        # Django raises its own exception with the driver's as the cause, except MySQL's
        # IntegrityError, which it raises with the driver's arguments and no cause.
        args: tuple[Any, ...] = getattr(cause, "args", ())
        return bool(args) and isinstance(args[0], int)

    @classmethod
    def matches(cls, error: BaseException, cause: BaseException, codes: Any) -> bool:
        return cause.args[0] in codes

    @classmethod
    def said(cls, error: BaseException, cause: BaseException) -> str:
        args = cause.args
        text = args[1] if len(args) == 2 else str(error)
        return str(text).strip().split("\n")[0]

    def claim_problem(self) -> str | None:
        level = self.options.get("isolation_level", "read committed")
        # Django lower-cases it too; None leaves the server's default, REPEATABLE READ.
        if not isinstance(level, str) or level.lower() != "read committed":
            return (
                f"MySQL database {self.connection.alias!r} uses isolation level {level!r}: above READ COMMITTED, "
                "InnoDB takes gap locks that make concurrent claims deadlock and stale snapshots hide new jobs"
            )
        return None

    def version_problem(self) -> str | None:
        # Only a MySQL connection has these, and its class imports mysqlclient: no isinstance.
        server: Any = self.connection
        if server.mysql_is_mariadb and server.mysql_version < MARIADB_MIN_VERSION:
            return (
                f"MariaDB {dotted(server.mysql_version)} has no SELECT ... SKIP LOCKED; "
                f"django-sqlqueue needs MariaDB {dotted(MARIADB_MIN_VERSION)} or newer (10.11+ is tested)"
            )
        return None

    # Claims: no ``UPDATE … RETURNING``: read the candidates, lock them by id, then mark them.

    def claim(self, claim: ClaimSteps) -> tuple[list[Any], int]:
        """Claims of this host take turns (``db/claim_lock``), each one transaction,
        run again on a deadlock (see :meth:`claim_in_turn`)."""
        with claim.turn():
            return claim.retry(lambda: self.claim_in_turn(claim))

    def claim_in_turn(self, claim: ClaimSteps) -> tuple[list[Any], int]:
        """Read the candidates' ids without locks, then lock just those rows by primary
        key, checking again that they are still candidates (InnoDB would otherwise lock
        every index record the ordered scan passes over), and set the admitted ones
        ``RUNNING`` by id. After a claim lost candidates to another worker, the next
        ones read more than they want (:class:`CandidateWindow`).

        Each locked row also brings the database's time, which becomes the attempt's
        start; the rows are read raw and made into jobs as the other databases' are."""
        candidates = claim.sql()
        if candidates is None:
            return [], 0
        window = self.made(CandidateWindow, claim.model)
        ids = claim.candidate_ids(candidates, claim.limit * window.per_job)
        if not ids:
            return [], 0
        jobs, started_at = claim.lock(candidates, ids)
        lost = window.lost(ids, [job.pk for job in jobs], claim.limit)
        position = {pk: index for index, pk in enumerate(ids)}
        jobs.sort(key=lambda job: position[job.pk])
        # Jobs over their limits stay READY; their locks go with the commit.
        return claim.mark(jobs, started_at), lost

    def latest(self, rows: QuerySet[Model]) -> QuerySet[Model]:
        """A locking read sees the latest committed rows, even under REPEATABLE READ,
        where a plain read would see the snapshot of the transaction's first read."""
        return rows.select_for_update()

    def holding(self, jobs: QuerySet[Model], index: KeyIndex, keys: list[str]) -> QuerySet[Model]:
        """Through the hidden generated column the unique index is on (no partial
        indexes here): the key while the job holds it, NULL otherwise."""
        marks = ", ".join("%s" for _ in keys)
        column = self.connection.ops.quote_name(index.mysql_column)
        return jobs.filter(RawSQL(f"{column} IN ({marks})", keys, output_field=models.BooleanField()))

    # Clock, wake-up, connections and estimates: UTC moved to the connection's zone, no
    # ``NOTIFY`` (its workers wake to a datagram), the server's connection limit, and
    # InnoDB's estimate of a table's rows.

    #: ``table_rows``, kept by ``ANALYZE TABLE`` and InnoDB's own statistics' refreshes;
    #: ``information_schema`` names a table by its plain name.
    ROWS_SQL = "SELECT table_rows FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = %s"

    def clock(self) -> str:
        """A wall-clock time in the connection's time zone: ``CURRENT_TIMESTAMP`` is the
        server's session zone's, so UTC moved by the connection's zone's offset."""
        utc = "UTC_TIMESTAMP(6)"
        offset = local_clock(self.connection.timezone_name, utc, "'%s'", "%s")
        return f"({utc} + INTERVAL ({offset}) SECOND)" if offset else utc

    def server_connections(self) -> ServerConnections | None:
        with self.connection.cursor() as cursor:
            cursor.execute("SELECT @@max_connections")
            (limit,) = cursor.fetchone()
            cursor.execute("SHOW GLOBAL STATUS LIKE 'Threads_connected'")
            _, in_use = cursor.fetchone()
        return ServerConnections(int(limit), int(in_use))

    # Inserts: values written into the statement's text, cut to max_allowed_packet, and text the charsets hold.

    skip_conflicts = " ON DUPLICATE KEY UPDATE id = id"

    def marks_new_rows(self, keyed: bool, identified: bool) -> bool:
        """An ``INSERT ... ON DUPLICATE KEY UPDATE`` returns no row (MySQL) or the
        holder's row beside the rows written (MariaDB's ``RETURNING``), so a keyed
        insert cannot tell which jobs it wrote. MySQL returns no ids of a multi-row
        ``INSERT``: only its first, and the others need not follow it when other inserts
        run at once (``innodb_autoinc_lock_mode`` 2, MySQL 8's default). MariaDB returns
        them all, in order."""
        return keyed or (identified and not self.returns_rows)

    def insert_marked(self, cursor: Any, insert: MarkedInsert) -> list[Sequence[Any]]:
        """MariaDB returns every row the ``INSERT`` met, a holder with its own token;
        ``INSERT IGNORE … RETURNING`` would return only the rows written, but would also
        turn a refused value into a warning. MySQL returns none: its rows are read back
        by their token, found through the unique index where every row has a key, and
        otherwise from the first id the statement wrote (each later row's id is larger,
        though not always the next one)."""
        sql, params, table, columns, token, keys, key_index = insert
        qn = self.connection.ops.quote_name
        if self.returns_rows:
            cursor.execute(f"{sql} RETURNING {columns}, {qn('insert_token')}", params)
            return [row[:-1] for row in cursor.fetchall() if row[-1] == token]
        cursor.execute(sql, params)
        if None in keys:  # a row without a key is always written: the first id is this statement's
            found, bound = "id >= %s", [cursor.lastrowid]
        else:
            found, bound = f"{qn(key_index.mysql_column)} IN ({', '.join(['%s'] * len(keys))})", list(keys)
        cursor.execute(
            f"SELECT {columns} FROM {table} WHERE {found} AND {qn('insert_token')} = %s ORDER BY id", [*bound, token]
        )
        return list(cursor.fetchall())

    def most_statement_bytes(self) -> int | None:
        return mysql_packets.most_statement_bytes(self.connection)

    def too_large(self, sql: str, params: Sequence[Any]) -> bool:
        return mysql_packets.too_large(self.connection, sql, params)

    def literal_rows(
        self, rows: Sequence[tuple[Sequence[Any], Sequence[tuple[str, Sequence[Any]]]]], constants: str
    ) -> list[str] | None:
        literals = Literals(self.connection, len(rows[0][0]) if rows else 0)
        same = literals.sql(constants, ())
        # Each row's text made once and measured as it is sent, all before the first
        # statement goes: held until then beside the rows' JSON, escaped.
        return [
            f"({literals.row(values)}, {', '.join([literals.sql(*time) for time in times])}, {same})"
            for values, times in rows
        ]

    def statement_starts(
        self, texts: Sequence[str], rows_per_statement: int, most_bytes: int, tasks: Sequence[str]
    ) -> list[int]:
        return mysql_packets.cut(list(map(mysql_packets.text_bytes, texts)), rows_per_statement, most_bytes, tasks)

    def text_problem(self, model: type[models.Model], texts: Mapping[str, str | None]) -> str | None:
        return mysql_charsets.text_problem(self.made(mysql_charsets.TextCharsets, model).columns, texts)

    def tables_charset_problem(self, tables: Sequence[str]) -> str | None:
        return mysql_charsets.tables_charset_problem(self.connection, tables)

    def connection_charset_problem(self) -> str | None:
        return mysql_charsets.connection_charset_problem(self.connection)

    def strict_mode_problem(self) -> str | None:
        return mysql_charsets.strict_mode_problem(self.connection)
