"""What may name a queue, and which queues ``SQLQUEUE_QUEUES`` allows: one rule and one
message, used by the settings, ``@job``, ``enqueue``, pausing, ``runworkers --queues``
and the admin's queue filter alike."""

from __future__ import annotations

from collections.abc import Iterable

from django_sqlqueue.rules.limits import QUEUE_NAME_MAX_LENGTH


def queue_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a queue, or None when it can."""
    if not isinstance(name, str) or not name:
        return f"a queue name must be a non-empty string, not {name!r}"
    if len(name) > QUEUE_NAME_MAX_LENGTH:
        return f"queue name {name!r} is longer than {QUEUE_NAME_MAX_LENGTH} characters"
    return None


def unlisted_queues_problem(names: Iterable[str], allowed: frozenset[str] | None) -> str | None:
    """Why ``names`` may not be used when ``SQLQUEUE_QUEUES`` is ``allowed``: the ones it
    does not list, sorted; None when it lists them all, or is None (any queue)."""
    if allowed is None or not (unlisted := sorted(set(names) - allowed)):
        return None
    if len(unlisted) == 1:
        return f"queue {unlisted[0]!r} is not one of SQLQUEUE_QUEUES {sorted(allowed)}"
    return f"queues {unlisted} are not in SQLQUEUE_QUEUES {sorted(allowed)}"


def offered_queues(allowed: frozenset[str] | None, default: str, registered: Iterable[str]) -> set[str]:
    """The queues a choice offers: ``SQLQUEUE_QUEUES`` when set (``allowed``), else the
    default queue and the queues the registered tasks name."""
    if allowed is not None:
        return set(allowed)
    return {default, *registered}
