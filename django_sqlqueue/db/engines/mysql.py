"""MySQL and MariaDB, through mysqlclient: their errors by number, the isolation level
a safe claim needs, and the oldest MariaDB with ``SKIP LOCKED``."""

from __future__ import annotations

from typing import Any

from django_sqlqueue.db.engines.base import Engine, ErrorCodes, ServerConnections, dotted
from django_sqlqueue.db.engines.zones import local_clock

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
