"""``Job.objects.build()``: its options taken as one value (``JobOptions``), the
keywords it documents and no others."""

from __future__ import annotations

from typing import Any

import pytest

from django_sqlqueue.managers import JobOptions
from django_sqlqueue.managers.enqueueing import _OPTIONS
from django_sqlqueue.models import Job
from tests.testapp.tasks import noop

pytestmark = pytest.mark.django_db


def _columns(job: Job) -> dict[str, Any]:
    return {name: value for name, value in job.__dict__.items() if name not in {"_state", "run_at", "enqueued_at"}}


def test_build_takes_every_option_of_job_options_and_no_other() -> None:
    assert set(JobOptions.__annotations__) == _OPTIONS
    for options in ({"bogus": None}, {"bogus": 1}, {"queue": "q", "colour": "red"}):
        with pytest.raises(TypeError, match=r"build\(\) got an unexpected keyword argument '(bogus|colour)'"):
            Job.objects.build(noop, **options)


def test_options_given_as_none_build_the_job_left_without_them() -> None:
    nothing: dict[str, Any] = dict.fromkeys(_OPTIONS)
    assert _columns(Job.objects.build(noop, (1,), **nothing)) == _columns(Job.objects.build(noop, (1,)))
    common: dict[str, Any] = {"queue": "q", "priority": 3, "max_attempts": 2, "timeout": 5}
    with_none = Job.objects.build(noop, (1,), **{**nothing, **common})
    assert _columns(with_none) == _columns(Job.objects.build(noop, (1,), **common))
    assert (with_none.queue, with_none.priority, with_none.max_attempts, with_none.timeout) == ("q", 3, 2, 5)


def test_the_options_a_template_does_not_hold_are_worked_out_the_long_way() -> None:
    job = Job.objects.build(noop, (1,), unique_key="k", tags=["a"], concurrency_key="c", concurrency_limit=2)
    assert (job.unique_key, job.new_tags, job.concurrency_key, job.concurrency_limit) == ("k", ("a",), "c", 2)
