"""MySQL/MariaDB: the values of many new jobs written into their ``INSERT`` as SQL text,
each distinct value of a column escaped once.

The driver (mysqlclient) binds no parameter on the server: it escapes every value of
a statement into its text, one Python call a value, which was the largest cost of a
multi-row ``INSERT`` on the client, more than building the jobs. The jobs of one
``enqueue_many`` mostly share their queue, task, options and often their arguments,
so here each value is escaped by the driver's own ``literal()`` the first time a
column meets it, and the statement goes with no parameters: the same text, made with
one call a distinct value instead of one a value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper


class Literals:
    """Rows of ``columns`` values, and SQL with parameters, as the text the driver
    would send for them on ``connection``. Two values a column holds that compare
    equal (``1`` and ``True``, ``1`` and ``1.0``) are one value to it, stored alike."""

    def __init__(self, connection: BaseDatabaseWrapper, columns: int) -> None:
        connection.ensure_connection()
        driver = connection.connection
        self._literal = driver.literal
        self._encoding = driver.encoding
        self._columns: list[dict[Any, str]] = [{} for _ in range(columns)]
        self._statements: dict[tuple[str, tuple[Any, ...]], str] = {}

    def row(self, values: Sequence[Any]) -> str:
        """``values`` (one a column) as SQL, separated by commas: one call a row, each
        new value escaped by the driver's ``literal()`` in place."""
        literal, encoding = self._literal, self._encoding
        texts = []
        for seen, value in zip(self._columns, values, strict=True):
            text = seen.get(value)
            if text is None:
                text = seen[value] = literal(value).decode(encoding)
            texts.append(text)
        return ", ".join(texts)

    def sql(self, sql: str, params: Sequence[Any]) -> str:
        """``sql`` with ``params`` in place of its ``%s`` (and ``%%`` as ``%``), as the driver
        makes it."""
        key = (sql, tuple(params))
        made = self._statements.get(key)
        if made is None:
            literal, encoding = self._literal, self._encoding
            made = self._statements[key] = sql % tuple([literal(param).decode(encoding) for param in params])
        return made
