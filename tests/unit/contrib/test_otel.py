"""``contrib/otel.py``: the enqueuing trace context kept in the job's meta, and each
attempt a ``CONSUMER`` span of the messaging conventions, its child or linked to it,
run here through ``run_jobs`` (which runs ``SQLQUEUE_MIDDLEWARE``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.test import override_settings
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

from django_sqlqueue.models import Job
from django_sqlqueue.testing import run_jobs
from tests.support.spies import tracebacks_formatted
from tests.support.tracing import in_memory
from tests.testapp.tasks import add, fail, fail_once, snooze

pytestmark = pytest.mark.django_db

PROPAGATE, PUBLISH = "django_sqlqueue.contrib.otel.propagate", "django_sqlqueue.contrib.otel.publish"
MIDDLEWARE, LINKED = "django_sqlqueue.contrib.otel.middleware", "django_sqlqueue.contrib.otel.linked_middleware"


@pytest.fixture(autouse=True)
def spans() -> Iterator[None]:
    """Only the spans of the test are kept."""
    exporter = in_memory()
    exporter.clear()
    yield
    exporter.clear()


def ended(name: str) -> list[ReadableSpan]:
    """The spans named ``name`` ended so far, in the order they ended."""
    return [span for span in in_memory().get_finished_spans() if span.name == name]


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=[PROPAGATE], SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_each_attempt_is_a_consumer_span_child_of_the_enqueuing_span() -> None:
    with trace.get_tracer("test").start_as_current_span("request") as request:
        job = Job.objects.enqueue(fail_once, ["flaky"])
    context = request.get_span_context()
    job.refresh_from_db()
    assert job.meta is not None
    assert job.meta["traceparent"] == f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"

    run_jobs(scheduled=True)

    first, second = ended("process default")
    for number, span in enumerate((first, second), start=1):
        assert span.kind is SpanKind.CONSUMER
        assert span.parent is not None
        assert (span.context.trace_id, span.parent.span_id) == (context.trace_id, context.span_id)
        assert dict(span.attributes or {}) == {
            "messaging.system": "django-sqlqueue",
            "messaging.operation.type": "process",
            "messaging.operation.name": "process",
            "messaging.destination.name": "default",
            "messaging.message.id": str(job.pk),
            "messaging.sqlqueue.task": job.task,
            "messaging.sqlqueue.attempt": number,
            "messaging.sqlqueue.outcome": "retried" if number == 1 else "succeeded",
            **({"error.type": "builtins.RuntimeError"} if number == 1 else {}),
        }
    assert (first.status.status_code, first.status.description) == (StatusCode.ERROR, "RuntimeError: flaky: first run")
    (recorded,) = first.events
    assert (recorded.name, (recorded.attributes or {})["exception.type"]) == ("exception", "RuntimeError")
    assert (second.status.status_code, second.events) == (StatusCode.UNSET, ())


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=[PROPAGATE], SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_a_job_that_fails_for_good_has_its_last_attempt_failed() -> None:
    job = Job.objects.enqueue(fail, ["down"], max_attempts=1)
    run_jobs()
    (span,) = ended("process default")
    assert span.attributes is not None
    assert (span.attributes["messaging.sqlqueue.outcome"], span.status.status_code) == ("failed", StatusCode.ERROR)
    # Enqueued in no trace: nothing kept, and the attempt's span is a root.
    job.refresh_from_db()
    assert (job.meta, span.parent) == ({}, None)


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=[PROPAGATE], SQLQUEUE_MIDDLEWARE=[LINKED])
def test_the_linked_middleware_starts_a_trace_linked_to_the_enqueuing_span() -> None:
    with trace.get_tracer("test").start_as_current_span("request") as request:
        Job.objects.enqueue(add, [1, 2], meta={"mine": 1})
    run_jobs()
    (span,) = ended("process default")
    context = request.get_span_context()
    assert span.parent is None
    assert span.context.trace_id != context.trace_id
    assert [(link.context.trace_id, link.context.span_id) for link in span.links] == [
        (context.trace_id, context.span_id)
    ]


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=[PUBLISH], SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_publish_makes_a_producer_span_per_job_that_each_attempt_continues() -> None:
    with trace.get_tracer("test").start_as_current_span("request") as request:
        jobs = Job.objects.enqueue_many([Job.objects.build(add, [1, 2]), Job.objects.build(add, [3, 4])])
    run_jobs()
    created, processed = ended("create default"), ended("process default")
    assert [span.kind for span in created] == [SpanKind.PRODUCER, SpanKind.PRODUCER]
    assert {span.parent.span_id for span in created if span.parent} == {request.get_span_context().span_id}
    assert [span.parent.span_id for span in processed if span.parent] == [span.context.span_id for span in created]
    assert [(span.attributes or {})["messaging.message.id"] for span in processed] == [str(job.pk) for job in jobs]


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=[PROPAGATE])
def test_the_trace_context_is_added_to_the_callers_meta_without_changing_it() -> None:
    mine = {"request_id": "r-1"}
    with trace.get_tracer("test").start_as_current_span("request"):
        job = Job.objects.enqueue(add, [1, 2], meta=mine)
    job.refresh_from_db()
    assert set(job.meta or {}) == {"request_id", "traceparent"}
    assert mine == {"request_id": "r-1"}


@override_settings(SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_a_snooze_is_no_error_and_a_snooze_too_many_fails_the_job() -> None:
    Job.objects.enqueue(snooze, [0])
    run_jobs(scheduled=True)
    spans = ended("process default")
    assert [
        ((span.attributes or {})["messaging.sqlqueue.outcome"], span.status.status_code, len(span.events))
        for span in spans
    ] == [("snoozed", StatusCode.UNSET, 0), ("snoozed", StatusCode.UNSET, 0), ("failed", StatusCode.ERROR, 1)]
    assert (spans[-1].attributes or {})["error.type"] == "django_sqlqueue.exceptions.SnoozedTooOften"


@override_settings(SQLQUEUE_MIDDLEWARE=[MIDDLEWARE])
def test_a_failed_attempts_span_reuses_the_decision_its_row_is_written_with(monkeypatch: pytest.MonkeyPatch) -> None:
    formatted = tracebacks_formatted(monkeypatch)
    job = Job.objects.enqueue(fail, ["down"], max_attempts=1)
    run_jobs()
    (span,) = ended("process default")
    assert span.attributes is not None
    assert span.attributes["messaging.sqlqueue.outcome"] == "failed"
    assert formatted == ["down"]
    job.refresh_from_db()
    assert len(job.errors) == 1
