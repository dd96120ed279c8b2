"""The columns' sizes (``rules/limits.py``) are the ones the models build: one number
for a column and for the check that guards it."""

from __future__ import annotations

from django.db import models

from django_sqlqueue.models import ConcurrencyKey, Job, PausedQueue, RateBucket, Schedule
from django_sqlqueue.rules import limits


def _max_length(model: type[models.Model], name: str) -> int | None:
    field = model._meta.get_field(name)
    assert isinstance(field, models.CharField)
    return field.max_length


def test_the_models_columns_take_their_sizes_from_limits() -> None:
    assert _max_length(Job, "queue") == limits.QUEUE_NAME_MAX_LENGTH
    assert _max_length(PausedQueue, "queue") == limits.QUEUE_NAME_MAX_LENGTH
    assert _max_length(Job, "task") == limits.TASK_NAME_MAX_LENGTH
    assert _max_length(Schedule, "task") == limits.TASK_NAME_MAX_LENGTH
    assert _max_length(Job, "unique_key") == limits.UNIQUE_KEY_MAX_LENGTH
    assert _max_length(Job, "concurrency_key") == limits.CONCURRENCY_KEY_MAX_LENGTH
    assert _max_length(ConcurrencyKey, "key") == limits.CONCURRENCY_KEY_MAX_LENGTH
    assert _max_length(RateBucket, "name") == limits.RATE_LIMIT_NAME_MAX_LENGTH
    assert _max_length(Schedule, "key") == limits.SCHEDULE_KEY_MAX_LENGTH
