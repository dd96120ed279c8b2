"""``contrib/sentry.py``: a job's final failure is reported once, with its task, id,
attempt, queue and the arguments' shape; a retry is not, unless asked. Read through
a transport of the SDK's that keeps what the client sends it."""

from __future__ import annotations

import atexit
from collections.abc import Iterator
from typing import Any

import pytest
import sentry_sdk
from django.test import override_settings
from sentry_sdk.envelope import Envelope
from sentry_sdk.transport import Transport

from django_sqlqueue.contrib.sentry import arguments_shape, middleware
from django_sqlqueue.models import Job
from django_sqlqueue.testing import run_jobs
from tests.support.spies import tracebacks_formatted
from tests.testapp.tasks import fail, fail_once, snooze

pytestmark = pytest.mark.django_db

MIDDLEWARE = "django_sqlqueue.contrib.sentry.middleware"
EVERY_ATTEMPT = "django_sqlqueue.contrib.sentry.every_attempt_middleware"


class Kept(Transport):
    """Keeps the envelopes the client sends it (at once: it sends nothing anywhere)."""

    def __init__(self, options: dict[str, Any] | None = None) -> None:
        super().__init__(options)
        self.envelopes: list[Envelope] = []

    def capture_envelope(self, envelope: Envelope) -> None:
        self.envelopes.append(envelope)

    def events(self) -> list[dict[str, Any]]:
        return [item.payload.json for envelope in self.envelopes for item in envelope.items if item.type == "event"]  # type: ignore[misc]


@pytest.fixture
def transport() -> Iterator[Kept]:
    """The SDK with its default integrations (logging among them), none of those it
    would find installed, and a transport that keeps the events."""
    kept = Kept()
    sentry_sdk.init(dsn="https://key@sentry.invalid/1", transport=kept, auto_enabling_integrations=False)
    yield kept
    sentry_sdk.get_client().close()
    sentry_sdk.get_global_scope().set_client(None)


@override_settings(SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_a_final_failure_is_reported_once_with_the_job_and_its_arguments_shape(transport: Kept) -> None:
    job = Job.objects.enqueue(fail, ["down"], max_attempts=2)
    run_jobs(scheduled=True)

    # Its last attempt only; not the runner's log line of it, a second time.
    (event,) = transport.events()
    assert event["level"] == "error"
    assert [(value["type"], value["value"]) for value in event["exception"]["values"]] == [("RuntimeError", "down")]
    assert event["tags"] == {
        "sqlqueue.task": "testapp.fail",
        "sqlqueue.job_id": str(job.pk),
        "sqlqueue.attempt": "2",
        "sqlqueue.queue": "default",
        "sqlqueue.outcome": "failed",
    }
    assert event["contexts"]["sqlqueue job"] == {
        "id": job.pk,
        "task": "testapp.fail",
        "queue": "default",
        "attempt": 2,
        "max_attempts": 2,
        "arguments": {"args": ["str"], "kwargs": {}},
    }


@override_settings(SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_a_retry_that_succeeds_is_not_reported(transport: Kept) -> None:
    Job.objects.enqueue(fail_once, ["flaky"])
    assert run_jobs(scheduled=True).succeeded == 1
    assert transport.events() == []


@override_settings(SQLQUEUE_MIDDLEWARE=[EVERY_ATTEMPT])
def test_snoozes_are_not_reported_and_a_snooze_too_many_is_the_failure(transport: Kept) -> None:
    Job.objects.enqueue(snooze, [0])
    run_jobs(scheduled=True)
    (event,) = transport.events()
    assert [value["type"] for value in event["exception"]["values"]] == ["Snooze", "SnoozedTooOften"]
    assert (event["level"], event["tags"]["sqlqueue.attempt"]) == ("error", "1")


@override_settings(SQLQUEUE_MIDDLEWARE=[EVERY_ATTEMPT])
def test_every_attempt_middleware_reports_a_retried_attempt_as_a_warning(transport: Kept) -> None:
    Job.objects.enqueue(fail_once, ["flaky"])
    Job.objects.enqueue(fail, ["down"], max_attempts=2)
    run_jobs(scheduled=True)
    assert sorted((event["tags"]["sqlqueue.task"], event["level"]) for event in transport.events()) == [
        ("testapp.fail", "error"),
        ("testapp.fail", "warning"),
        ("tests.testapp.tasks.fail_once", "warning"),
    ]


def test_the_arguments_shape_names_their_types_only() -> None:
    assert arguments_shape([7, "me@example.com", None, [1]], {"greeting": "Hi", "vip": True}) == {
        "args": ["int", "str", "NoneType", "list"],
        "kwargs": {"greeting": "str", "vip": "bool"},
    }


@override_settings(SQLQUEUE_MIDDLEWARE=[EVERY_ATTEMPT, "django_sqlqueue.contrib.otel.middleware"])
def test_each_failed_attempt_is_decided_once_for_the_report_the_span_and_the_row(
    transport: Kept, monkeypatch: pytest.MonkeyPatch
) -> None:
    formatted = tracebacks_formatted(monkeypatch)
    Job.objects.enqueue(fail, ["down"], max_attempts=2)
    run_jobs(scheduled=True)
    assert len(transport.events()) == 2
    # One traceback an attempt: the one its row keeps, which the middlewares reuse.
    assert formatted == ["down", "down"]


def test_each_worker_process_sends_its_last_reports_as_it_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    registered: list[Any] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    middleware(lambda job: None)
    assert registered == [sentry_sdk.flush]
