"""The columns that hold names the queue matches on (queues, workers, keys, schedules),
compared byte for byte on every database.

PostgreSQL's deterministic collations and SQLite's ``BINARY`` compare text exactly, but a
MySQL/MariaDB table takes the database's collation, usually a case- and
accent-insensitive one (``utf8mb4_unicode_ci``, ``utf8mb4_general_ci``) that pads with
spaces: there ``--queues reports`` claimed the jobs of ``Reports``, ``REPORTS``,
``reports `` and ``répörts`` too, and pausing one paused them all. So on MySQL/MariaDB
these columns get a binary collation that does not pad (``utf8mb4_bin`` still does:
``'reports' = 'reports '``), and are utf8mb4 whatever the table's character set."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.db import models
from django.db.backends.base.base import BaseDatabaseWrapper

#: MariaDB's binary utf8mb4 collation without padding (10.2+).
MARIADB_COLLATION = "utf8mb4_nopad_bin"
#: MySQL's (8.0.17+); before it, ``utf8mb4_bin``, binary but padded (it ignores trailing spaces).
MYSQL_COLLATION = "utf8mb4_0900_bin"
MYSQL_PADDED_COLLATION = "utf8mb4_bin"

_ST = TypeVar("_ST", contravariant=True)
_GT = TypeVar("_GT", covariant=True)
# Generic in the stubs, not at run time: generic here too, so that the stubs' plugin
# types a NameField as a CharField (``str``, or ``str | None`` when nullable).
if TYPE_CHECKING:
    _CharField = models.CharField
else:

    class _CharField(models.CharField, Generic[_ST, _GT]):
        pass


def binary_collation(connection: BaseDatabaseWrapper) -> str | None:
    """The collation that compares this MySQL/MariaDB connection's text byte for byte;
    None elsewhere, where the database's own already does."""
    if connection.vendor != "mysql":
        return None
    server: Any = connection  # only a MySQL connection has these, and its class imports mysqlclient
    if server.mysql_is_mariadb:
        return MARIADB_COLLATION
    return MYSQL_COLLATION if server.mysql_version >= (8, 0, 17) else MYSQL_PADDED_COLLATION


class NameField(_CharField[_ST, _GT]):
    """A ``CharField`` whose values compare byte for byte on every database: with
    :func:`binary_collation` on MySQL/MariaDB, as a plain ``CharField`` elsewhere.

    The collation is the field's, per database, so a later ``AlterField`` of the column
    (a new ``max_length``, say) keeps it; ``db_collation`` would name one collation for
    every database."""

    def db_parameters(self, connection: BaseDatabaseWrapper) -> dict[str, Any]:
        parameters = super().db_parameters(connection)
        if self.db_collation is None:
            parameters["collation"] = binary_collation(connection)
        return parameters
