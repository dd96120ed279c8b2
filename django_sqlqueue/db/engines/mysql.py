"""MySQL and MariaDB, through mysqlclient: their errors by number, the isolation level
a safe claim needs, and the oldest MariaDB with ``SKIP LOCKED``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.db import models

from django_sqlqueue.db.engines import mysql_charsets, mysql_packets
from django_sqlqueue.db.engines.base import Engine, ErrorCodes, dotted
from django_sqlqueue.db.engines.mysql_literals import Literals

MARIADB_MIN_VERSION = (10, 6)


class MySQL(Engine):
    vendor = "mysql"
    display = "MySQL"
    codes = ErrorCodes(
        # ER_LOCK_DEADLOCK, ER_LOCK_WAIT_TIMEOUT.
        transient=frozenset({1213, 1205}),
        away=frozenset(
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
