"""The queue rules (``rules/queues.py``): one check of ``SQLQUEUE_QUEUES``, one message,
whoever asks (settings, ``@job``, ``enqueue``, pausing, ``runworkers --queues``)."""

from __future__ import annotations

from django_sqlqueue.rules.queues import offered_queues, queue_name_problem, unlisted_queues_problem


def test_any_queue_is_allowed_without_sqlqueue_queues() -> None:
    assert unlisted_queues_problem(["anything"], None) is None


def test_listed_queues_are_allowed() -> None:
    assert unlisted_queues_problem(["mail", "default"], frozenset({"default", "mail"})) is None


def test_one_unlisted_queue_is_named() -> None:
    problem = unlisted_queues_problem(["mail", "reports"], frozenset({"default", "mail"}))
    assert problem == "queue 'reports' is not one of SQLQUEUE_QUEUES ['default', 'mail']"


def test_several_unlisted_queues_are_named_sorted() -> None:
    problem = unlisted_queues_problem(["zz", "aa", "aa"], frozenset({"default"}))
    assert problem == "queues ['aa', 'zz'] are not in SQLQUEUE_QUEUES ['default']"


def test_queue_names_are_non_empty_and_fit_the_column() -> None:
    assert queue_name_problem("") == "a queue name must be a non-empty string, not ''"
    assert queue_name_problem("q" * 101) == f"queue name {'q' * 101!r} is longer than 100 characters"
    assert queue_name_problem("q" * 100) is None


def test_offered_queues_are_the_allowed_ones_when_set() -> None:
    assert offered_queues(frozenset({"a", "b"}), "default", ["c"]) == {"a", "b"}


def test_offered_queues_are_the_default_and_the_tasks_queues_otherwise() -> None:
    assert offered_queues(None, "default", ["mail", "mail", "reports"]) == {"default", "mail", "reports"}
