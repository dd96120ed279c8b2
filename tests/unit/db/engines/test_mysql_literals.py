"""``db/engines/mysql_literals.py``: on MySQL/MariaDB the values of many new jobs go in their INSERT's
text, escaped as the driver's own binding escapes them."""

from __future__ import annotations

import pytest
from django.db import connection

from django_sqlqueue.db.engines.mysql_literals import Literals
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL's driver writes values into the text"),
]

ROWS = [
    ["it's", 'a "quote"', "back\\slash", "100%", "é \U0001f600", 1, 2.5, None, True, False],
    ["it's", "new\nline", "back\\slash", "%s", "é", 1, 1.0, None, True, 0],
]


def test_rows_are_the_text_the_driver_binds() -> None:
    literals = Literals(connection, len(ROWS[0]))
    with connection.cursor() as cursor:
        for row in ROWS:
            marks = ", ".join(["%s"] * len(row))
            assert literals.row(row) == cursor.cursor.mogrify(marks, row)


def test_sql_with_parameters_is_the_text_the_driver_binds() -> None:
    literals = Literals(connection, 0)
    with connection.cursor() as cursor:
        for sql, params in [("%s + INTERVAL %s SECOND", ("2030-01-01 00:00:00", 60)), ("'100%%'", ())]:
            assert literals.sql(sql, params) == cursor.cursor.mogrify(sql, params)


def test_values_that_need_escaping_are_stored_as_given() -> None:
    texts = ["it's", 'a "quote"', "back\\slash", "100%", "%s", "new\nline", "é \U0001f600"]
    Job.objects.enqueue_many([Job.objects.build(noop, [text], meta={"text": text}) for text in texts])
    assert list(Job.objects.order_by("id").values_list("args", "meta")) == [([text], {"text": text}) for text in texts]
