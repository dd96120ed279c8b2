"""``manage.py sqlqueue_queues list|pause|resume NAME``."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from django_sqlqueue.models import PausedQueue

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
