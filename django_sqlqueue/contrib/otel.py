"""OpenTelemetry tracing of jobs (``pip install "django-sqlqueue[otel]"``): the trace
context of the code that enqueues a job is kept in the job's ``meta``, and each attempt
is a span that continues it. Two lines of settings::

    SQLQUEUE_ENQUEUE_HOOKS = ["django_sqlqueue.contrib.otel.propagate"]
    SQLQUEUE_MIDDLEWARE = ["django_sqlqueue.contrib.otel.middleware"]

- :func:`propagate` (an enqueue hook) writes the caller's context into ``job.meta`` with
  the global propagator (W3C ``traceparent``, ``tracestate`` and ``baggage`` by
  default); :func:`publish` does too, under a ``PRODUCER`` span ``create <queue>`` of
  its own, one per job.
- :func:`middleware` makes each attempt a ``CONSUMER`` span ``process <queue>``, a child
  of the enqueuing context: the job's attempts show in the trace of the request that
  enqueued it. :func:`linked_middleware` starts each attempt's trace afresh, linked to
  the enqueuing context: for jobs that run long after, or many from one request, whose
  traces would otherwise make one trace too long or too wide to read.

The spans follow OpenTelemetry's messaging conventions (``messaging.system``,
``messaging.operation.*``, ``messaging.destination.name`` the queue,
``messaging.message.id`` the job's id), with the job's task, attempt and outcome (the
state machine's: ``succeeded``, ``retried``, ``failed``, ``cancelled``,
``snoozed``) under ``messaging.sqlqueue.*``; a failed attempt records its exception,
``error.type`` and the status ``ERROR`` (a snooze is not an error). The SDK (tracer
provider, exporter) is the project's to set up, in each worker process as in the web's:
without one the API's spans cost little."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django_sqlqueue.contrib import missing
from django_sqlqueue.models import Job
from django_sqlqueue.rules.lifecycle import SNOOZE, SUCCEED
from django_sqlqueue.runner.middleware import Handler, after_error

try:
    from opentelemetry import context, trace
    from opentelemetry import propagate as propagation
    from opentelemetry.context import Context
    from opentelemetry.trace import Link, SpanKind, Status, StatusCode
except ImportError as error:
    raise missing("otel", "opentelemetry-api", error) from None

#: ``messaging.system``: not one of the conventions' well-known values, so our own name.
SYSTEM = "django-sqlqueue"
#: The instrumentation's name, its tracer's.
TRACER = "django_sqlqueue"


def propagate(job: Job) -> None:
    """An enqueue hook (``SQLQUEUE_ENQUEUE_HOOKS``): the caller's trace context, written
    into ``job.meta`` by the global propagator; nothing when there is none."""
    carrier: dict[str, str] = {}
    propagation.inject(carrier)
    if carrier:
        # A new dict: the caller's meta may be shared by the jobs of several enqueues.
        job.meta = {**(job.meta or {}), **carrier}


def publish(job: Job) -> None:
    """An enqueue hook: a ``PRODUCER`` span ``create <queue>``, a child of the caller's
    context, whose context is written into ``job.meta``; every attempt continues it, so
    each job of an ``enqueue_many`` shows apart in the trace. The span ends as the hook
    returns: it marks the job's creation, not the insert that follows."""
    with trace.get_tracer(TRACER).start_as_current_span(
        f"create {job.queue}", kind=SpanKind.PRODUCER, attributes=_attributes(job, "create")
    ):
        propagate(job)


def traced(*, link: bool) -> Callable[[Handler], Handler]:
    """A middleware factory whose spans are children of the enqueuing context, or, with
    ``link``, roots of their own traces linked to it."""

    def factory(get_result: Handler) -> Handler:
        tracer = trace.get_tracer(TRACER)

        def wrapper(job: Job) -> Any:
            parent, links = _placed(propagation.extract(job.meta or {}), link)
            # Current for the attempt: the task's spans nest in it, and it reads the baggage.
            token = context.attach(parent)
            try:
                return _process(tracer, get_result, job, links)
            finally:
                context.detach(token)

        return wrapper

    return factory


def _process(tracer: trace.Tracer, get_result: Handler, job: Job, links: list[Link]) -> Any:
    """``get_result(job)`` in the attempt's span, a child of the current context."""
    with tracer.start_as_current_span(
        f"process {job.queue}",
        kind=SpanKind.CONSUMER,
        links=links,
        attributes={
            **_attributes(job, "process"),
            "messaging.message.id": str(job.pk),
            "messaging.sqlqueue.attempt": job.attempts,
        },
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        try:
            value = get_result(job)
        except Exception as raised:
            failure = after_error(job, raised)
            span.set_attribute("messaging.sqlqueue.outcome", failure.transition.outcome)
            if failure.transition is not SNOOZE:  # a snooze is no error: the job runs again later
                error = failure.error
                span.set_attribute("error.type", f"{type(error).__module__}.{type(error).__qualname__}")
                span.record_exception(error)
                span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
            raise
        span.set_attribute("messaging.sqlqueue.outcome", SUCCEED.outcome)
        return value


def _placed(enqueuing: Context, link: bool) -> tuple[Context, list[Link]]:
    """The parent context of an attempt's span and its links: the enqueuing context as
    the parent, or (``link``) as the one link of a new trace."""
    if not link:
        return enqueuing, []
    found = trace.get_current_span(enqueuing).get_span_context()
    # An empty context: the span starts a trace of its own.
    return Context(), [Link(found)] if found.is_valid else []


def _attributes(job: Job, operation: str) -> dict[str, Any]:
    """The messaging conventions' attributes of ``job``'s span for ``operation`` that it
    has as it is created (no id yet)."""
    return {
        "messaging.system": SYSTEM,
        "messaging.operation.type": operation,
        "messaging.operation.name": operation,
        "messaging.destination.name": job.queue,
        "messaging.sqlqueue.task": job.task,
    }


#: Each attempt a span, a child of the enqueuing context.
middleware = traced(link=False)
#: Each attempt a span in a trace of its own, linked to the enqueuing context.
linked_middleware = traced(link=True)
