"""The ``sqlqueue`` fixture (``pytest_plugin.py``), used as the README shows: a test of a
view that enqueues a job, written as a project would write it."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from django.test import Client

from tests.testapp.models import Receipt
from tests.testapp.tasks import send_welcome


def test_sign_up_sends_a_welcome_mail(client: Client, sqlqueue: ModuleType, settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.testapp.urls"
    response = client.post("/sign-up/", {"email": "ada@example.com"})
    assert response.status_code == 201
    receipt = Receipt.objects.get()
    sqlqueue.assert_enqueued(send_welcome, args=[receipt.pk], kwargs={"greeting": "Welcome"}, queue="mail")
    assert sqlqueue.run_jobs() == sqlqueue.Ran(succeeded=1)
    sqlqueue.refute_enqueued(send_welcome)
