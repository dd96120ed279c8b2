"""``manage.py sqlqueue_queues list|pause|resume NAME``."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import override_settings

from django_sqlqueue.models import PausedQueue
from tests.support.charsets import column_in

pytestmark = pytest.mark.django_db


def queues(*args: str) -> str:
    out = StringIO()
    call_command("sqlqueue_queues", *args, stdout=out)
    return out.getvalue()


def test_pause_list_and_resume() -> None:
    assert queues("list") == "No queue is paused.\n"
    assert queues("pause", "mail", "--reason", "provider down") == "Paused queue 'mail'.\n"
    assert queues("pause", "mail") == "Queue 'mail' was already paused.\n"
    [line] = queues("list").splitlines()
    assert line.startswith("mail  paused at ")
    assert line.endswith(": provider down")
    assert queues("resume", "mail") == "Resumed queue 'mail'.\n"
    assert queues("resume", "mail") == "Queue 'mail' was not paused.\n"
    assert not PausedQueue.objects.exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ([], "the following arguments are required: list|pause|resume"),
        (["stop", "mail"], "argument list|pause|resume: invalid choice: 'stop'"),
        (["pause"], "the following arguments are required: NAME"),
        (["pause", "q" * 101], "is longer than 100 characters"),
    ],
)
def test_usage_errors(args: list[str], error: str) -> None:
    with pytest.raises(CommandError, match=error):
        queues(*args)


@override_settings(SQLQUEUE_QUEUES=["default"])
def test_a_queue_settings_do_not_allow_is_an_error() -> None:
    with pytest.raises(CommandError, match="'mail' is not one of SQLQUEUE_QUEUES"):
        queues("pause", "mail")


@pytest.mark.skipif(connection.vendor != "mysql", reason="only MySQL/MariaDB tables have character sets")
@pytest.mark.django_db(transaction=True)
def test_a_reason_the_table_cannot_store_is_a_command_error() -> None:
    # Before: a raw OperationalError 1366 on a latin1 table in strict mode.
    refused = re.escape("reason 'провайдер упал' holds 'п' (U+043F), which the character set latin1 cannot")
    with column_in("latin1", PausedQueue._meta.db_table, "reason"), pytest.raises(CommandError, match=refused):
        queues("pause", "mail", "--reason", "провайдер упал")
    assert not PausedQueue.objects.exists()
