"""The sizes and ranges of the jobs' columns, in one place: the models build their
fields from these, and the rules that check a value before it is written read the
same numbers, so a column and its check cannot drift apart."""

from __future__ import annotations

#: A queue's name (``Job.queue``, ``PausedQueue.queue``).
QUEUE_NAME_MAX_LENGTH = 100
#: A registered task's name (``Job.task``).
TASK_NAME_MAX_LENGTH = 255
#: A job's ``unique_key``.
UNIQUE_KEY_MAX_LENGTH = 255
#: A job's ``concurrency_key`` and its ``ConcurrencyKey`` row.
CONCURRENCY_KEY_MAX_LENGTH = 255
#: The longest a rate limit's name may be (its bucket row's primary key).
RATE_LIMIT_NAME_MAX_LENGTH = 100
#: The longest entry name of ``SQLQUEUE_SCHEDULE``: the ``Schedule.key`` column.
SCHEDULE_KEY_MAX_LENGTH = 200
#: A job's ``priority``, checked by a ``CheckConstraint``.
MIN_PRIORITY = -100
MAX_PRIORITY = 100
#: ``max_attempts`` is an ``integer`` column on PostgreSQL (the smallest of the three).
MAX_ATTEMPTS = 2**31 - 1
#: ``snoozes`` is an ``integer`` column too, and ``max_snoozes`` is compared with it.
MAX_SNOOZES = 2**31 - 1
#: A job's tag (``JobTag.tag``), and the most tags one job may have.
TAG_MAX_LENGTH = 64
MAX_TAGS = 20
