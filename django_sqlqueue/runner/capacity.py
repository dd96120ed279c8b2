"""What ``runworkers`` costs in database connections, and whether the server can hold
them: each worker process holds its own for its whole life (``bootstrap.own_connections``),
so ``--processes`` and ``--threads`` multiply, and a server out of slots refuses the
processes one by one, each start failing, rather than saying so once."""

from __future__ import annotations

from django.db import Error

from django_sqlqueue.db.engines import engine_for
from django_sqlqueue.db.engines.errors import is_unavailable
from django_sqlqueue.db.routing import queue_db
from django_sqlqueue.models import Job


def connections_problem(processes: int, threads: int) -> str | None:
    """Why the server of the jobs' database cannot hold ``processes`` worker processes
    of ``threads`` threads besides the connections open now, or None: also when it has
    no limit to ask (SQLite), or is away (the supervisor waits for it, as ever)."""
    using = queue_db(Job)
    database = engine_for(using)
    try:
        server = database.server_connections()
    except Error as error:
        if not is_unavailable(error):
            raise
        return None
    each = database.worker_connections(threads)
    if server is None or processes * each <= server.free:
        return None
    return (
        f"--processes {processes} x --threads {threads} needs up to {processes * each} connections to database "
        f"{using!r} ({each} per process), but its server takes {server.free} more: max_connections allows "
        f"{server.limit} and {server.in_use} are open. Run fewer processes or threads, or raise max_connections."
    )
