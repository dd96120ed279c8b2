"""The real ``runworkers`` with ``contrib.otel``'s middleware: each attempt in a worker
process is a span of the trace that enqueued its job, in the test process."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from django.test import override_settings
from opentelemetry import trace

from django_sqlqueue.models import Job
from tests.support.tracing import in_memory
from tests.support.workers import Workers
from tests.testapp.tasks import add, fail

MIDDLEWARE = json.dumps(["tests.support.tracing.exporting", "django_sqlqueue.contrib.otel.middleware"])


@override_settings(SQLQUEUE_ENQUEUE_HOOKS=["django_sqlqueue.contrib.otel.propagate"])
def test_runworkers_makes_each_attempt_a_span_of_the_enqueuing_trace(
    start_workers: Callable[..., Workers], tmp_path: Path
) -> None:
    in_memory()  # this process's spans are recorded, so they have ids to pass on
    with trace.get_tracer("test").start_as_current_span("request") as request:
        done = Job.objects.enqueue(add, [2, 3])
        broken = Job.objects.enqueue(fail, ["down"], max_attempts=1)
    spans = tmp_path / "spans.jsonl"

    workers = start_workers(
        "--burst", "--processes", "1", SQLQUEUE_MIDDLEWARE=MIDDLEWARE, SQLQUEUE_TEST_SPANS=str(spans)
    )
    assert workers.wait(120) == 0, workers.text()

    exported = [json.loads(line) for line in spans.read_text().splitlines()]
    context = request.get_span_context()
    assert [(span["name"], span["kind"], span["context"]["trace_id"], span["parent_id"]) for span in exported] == [
        ("process default", "SpanKind.CONSUMER", f"0x{context.trace_id:032x}", f"0x{context.span_id:016x}")
    ] * 2
    by_job = {span["attributes"]["messaging.message.id"]: span for span in exported}
    assert by_job[str(done.pk)]["attributes"]["messaging.sqlqueue.outcome"] == "succeeded"
    failed = by_job[str(broken.pk)]
    assert (failed["attributes"]["messaging.sqlqueue.outcome"], failed["status"]["status_code"]) == ("failed", "ERROR")
    assert [event["name"] for event in failed["events"]] == ["exception"]
