"""The names ``runworkers`` goes by in the database: the supervisor's on the maintenance
lease (``Leader.holder``: the ``--name`` prefix, then ``host:pid``) and each worker
process's (``Worker.name`` and ``Job.worker``: the supervisor's, then ``:n:xxxx``, its
process number and a random tag).

The command refuses a prefix whose longest name would not fit those columns. Without
that, the lease's write killed the supervisor, every worker died registering, again
and again, and a non-strict MariaDB cut the names to one and the same, so that workers
finished one another's jobs and ran them again."""

from __future__ import annotations

import secrets
import socket

from django.db import models

from django_sqlqueue.models import Job, Leader, Worker
from django_sqlqueue.rules.validation import text_problem

#: The widest process id: ``pid_t`` is a signed 32-bit integer on every POSIX system.
WIDEST_PID = 2**31 - 1
#: The widest process number: a supervisor counts the processes it starts (restarts
#: included), which no run takes to 19 digits.
WIDEST_NUMBER = 10**19 - 1
#: Hex digits of the random tag that tells apart two workers of one pid and number
#: (two supervisors of the same pid on hosts of the same name).
_TAG_DIGITS = 4


def holder_name(prefix: str, pid: int) -> str:
    """The supervisor's name on the maintenance lease; its workers' names start with it."""
    return f"{prefix}{socket.gethostname()}:{pid}"


def worker_name(holder: str, number: int) -> str:
    """The name of the ``number``-th worker process the supervisor ``holder`` starts."""
    return f"{holder}:{number}:{secrets.token_hex(_TAG_DIGITS // 2)}"


def longest_prefix() -> int:
    """The most characters ``--name`` may have on this host: its widest worker name
    (the widest pid and process number) must fit ``Worker.name`` and ``Job.worker``,
    and its supervisor's name ``Leader.holder``."""
    holder = holder_name("", WIDEST_PID)
    return min(
        _max_length(Leader, "holder") - len(holder),
        min(_max_length(Worker, "name"), _max_length(Job, "worker")) - len(worker_name(holder, WIDEST_NUMBER)),
    )


def _max_length(model: type[Job | Leader | Worker], name: str) -> int:
    field = model._meta.get_field(name)
    assert isinstance(field, models.CharField)
    assert field.max_length is not None
    return field.max_length


def name_prefix_problem(prefix: str) -> str | None:
    """Why ``prefix`` cannot start the names of this host's workers, or None."""
    if problem := text_problem(prefix):
        return f"{prefix!r} {problem}"
    longest = longest_prefix()
    if len(prefix) > longest:
        return (
            f"{len(prefix)} characters is too long: at most {longest} fit on this host, as each worker's name "
            f"adds {socket.gethostname()!r}, the supervisor's pid, a process number and a tag "
            f"(host:pid:n:xxxx) and must fit the {_max_length(Worker, 'name')} characters of a worker's name"
        )
    return None
