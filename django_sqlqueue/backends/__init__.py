"""django-sqlqueue as a backend for Django's Tasks framework (``django.tasks``, or the
``django-tasks`` backport on Django 5.2)::

    TASKS = {"default": {"BACKEND": "django_sqlqueue.backends.SQLQueueBackend"}}

A task result is a job row: ``enqueue`` writes one inside the caller's transaction and
``get_result`` reads it back, from any process. ``runworkers`` runs the jobs."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from django.core.exceptions import ImproperlyConfigured
from django.db import transaction
from django.utils.module_loading import import_string

from django_sqlqueue.backends.compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskResult,
    TaskResultDoesNotExist,
    task_enqueued,
)
from django_sqlqueue.backends.metadata import enqueue_meta, save_meta
from django_sqlqueue.backends.results import job_result
from django_sqlqueue.backends.retries import TaskBackoff
from django_sqlqueue.exceptions import UnknownTaskError
from django_sqlqueue.rules.backoff import Backoff, backoff_problem
from django_sqlqueue.rules.registry import get_task, register
from django_sqlqueue.rules.tags import merged, tags_problem
from django_sqlqueue.rules.validation import job_options_problem
from django_sqlqueue.signals import send

if TYPE_CHECKING:
    # The methods import it when they run: Django imports this module to create the
    # backend when a module defining a task is imported, which may be before models load.
    from django_sqlqueue.models import Job

_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Our job options a task or the backend's ``OPTIONS`` may set; Django's own
#: ``queue_name`` and ``priority`` are the job's queue and priority.
JOB_OPTIONS = ("max_attempts", "timeout", "expires_in")
#: The retry settings of Django's retry proposal, in ``OPTIONS`` or beside it (where the
#: proposal puts them): ``MAX_ATTEMPTS`` is ``max_attempts``; ``BACKOFF`` a callable
#: or its dotted path, every task's backoff unless it has its own.
RETRY_SETTINGS = ("MAX_ATTEMPTS", "BACKOFF")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class SQLQueueTask(Task):  # type: ignore[type-arg]  # generic in the stubs, not at run time
    """Django's ``Task`` with our retry, timeout and expiry options. Where ``@task`` passes extra
    keyword arguments on (Django 6.1, the backport), ``@task(max_attempts=5, timeout=60, expires_in=300)``
    sets them; ``None`` falls back to the backend's ``OPTIONS``, then to settings."""

    max_attempts: int | None = None
    timeout: float | None = None
    #: Seconds after the enqueue from which the job is never started (see the Expiry guide).
    expires_in: float | None = None
    #: ``@job``'s ``unique``, ``unique_queue`` and ``unique_until``: the job's ``unique_key`` is derived from
    #: these arguments; when an active job holds it, ``enqueue`` returns that job's result.
    unique: bool | tuple[str, ...] | None = None
    unique_queue: bool = False
    unique_until: str | None = None
    #: The results (or job ids) whose jobs this one waits for, and ``after_failure``
    #: (see the Workflows guide): set for one enqueue with :meth:`waiting_for`.
    after: tuple[Any, ...] = ()
    after_failure: str | None = None
    #: ``@job``'s ``max_snoozes``: a job that raises ``Snooze`` more often is ``FAILED``
    #: (``None``: ``SQLQUEUE_MAX_SNOOZES``).
    max_snoozes: int | None = None
    #: ``@job``'s ``tags``: every job of the task has them (the admin's tag filter offers
    #: them); :meth:`tagged` adds more for one enqueue.
    tags: tuple[str, ...] = ()
    #: ``@job``'s ``atomic``: the task runs in a transaction on the jobs table's database,
    #: its success written in it (see the Transactional completion guide).
    atomic: bool | str = False
    #: The job's ``meta``, set for one enqueue with :meth:`with_meta` (a dict: not hashed).
    meta: dict[str, Any] | None = dataclasses.field(default=None, hash=False)
    #: The retry proposal's ``backoff(exception, task_result)``: seconds (or a timedelta)
    #: before a failed attempt's retry, or None for no more (``None``: the backend's
    #: ``BACKOFF``, else ``SQLQUEUE_RETRY_BACKOFF``'s doubling). Not changed by ``using()``.
    backoff: Backoff | None = None

    def waiting_for(self, *results: Any, after_failure: str | None = None) -> SQLQueueTask:
        """A copy of this task whose enqueue waits until the jobs of ``results`` (task
        results, or their ids) have finished: ``task.waiting_for(first, second).enqueue(...)``.
        Until then its result's status is ``READY``."""
        return dataclasses.replace(self, after=(*self.after, *results), after_failure=after_failure)

    def tagged(self, *tags: str) -> SQLQueueTask:
        """A copy of this task whose enqueue adds ``tags`` to the task's own:
        ``task.tagged("tenant:42").enqueue(...)`` (see the Tags guide)."""
        return dataclasses.replace(self, tags=merged(self.tags, tags))

    def with_meta(self, meta: dict[str, Any]) -> SQLQueueTask:
        """A copy of this task whose enqueue writes ``meta`` (JSON, shown on the job's
        admin page) into the job, over the keys of an earlier ``with_meta``."""
        return dataclasses.replace(self, meta={**(self.meta or {}), **meta})

    def __post_init__(self) -> None:
        """Validated by the backend (what Django's ``Task`` does), then registered, so
        that a worker finds the task by name and imports nothing a row names."""
        Task.__post_init__(self)  # not super(): a slots dataclass is a new class
        # @task(tags=[...]) gives a list: kept as a tuple, each tag once, as @job keeps them.
        object.__setattr__(self, "tags", merged(self.tags))
        if _unregistered(self):
            named = ("unique", "unique_queue", "unique_until", "max_snoozes", "atomic")
            own = {name: getattr(self, name) for name in named}
            # Left out when unset; max_snoozes=0 is set (a job fails at its first snooze).
            options = {name: value for name, value in own.items() if value is not None and value is not False}
            if self.tags:
                options["tags"] = self.tags
            register(self.func, name=self.module_path, django_task=self, backoff=TaskBackoff(self), **options)

    def enqueue_on_commit(self, *args: Any, **kwargs: Any) -> None:
        """Enqueue the task once the transaction open on the jobs' database commits (at
        once outside one), as ``transaction.on_commit(partial(task.enqueue, ...))`` does,
        and never when it rolls back: the spelling Django's open proposal gives it.
        Returns nothing, as the job does not exist yet.

        The arguments and options are checked now, and a mistake raises here (as
        ``enqueue`` would); an error of the enqueue itself, after the commit, is raised
        from the block that committed. ``enqueue`` inside the transaction is what makes
        the job part of it; see the Tasks backend guide for when to use which."""
        backend = self.get_backend()
        check = getattr(backend, "check_enqueue", None)
        if check is not None:
            check(self, list(args), kwargs)
        transaction.on_commit(
            functools.partial(self.enqueue, *args, **kwargs), using=getattr(backend, "database", None)
        )


class SQLQueueBackend(BaseTaskBackend):
    """Runs Django tasks on the jobs table.

    ``OPTIONS`` may hold ``max_attempts``, ``timeout`` and ``expires_in``: the defaults of every task of
    this backend that does not set its own; and the retry proposal's ``MAX_ATTEMPTS`` and
    ``BACKOFF`` (a callable or its dotted path), there or beside ``OPTIONS``. Creating the
    backend reads settings only: Django creates it when a task module is imported, which
    may be before models load."""

    task_class = SQLQueueTask
    supports_defer = True
    supports_priority = True
    supports_get_result = True
    supports_async_task = True
    #: Django's metadata (its development version): a job's ``meta`` (``backends.metadata``).
    supports_metadata = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        where = f"TASKS[{alias!r}]"
        retries = _retry_settings(where, params, self.options)
        self.options = {name: value for name, value in self.options.items() if name not in RETRY_SETTINGS}
        if unknown := sorted(set(self.options) - set(JOB_OPTIONS)):
            raise ImproperlyConfigured(
                f"{where}['OPTIONS'] has unknown keys {unknown}: it takes {', '.join((*JOB_OPTIONS, *RETRY_SETTINGS))}."
            )
        if "MAX_ATTEMPTS" in retries:
            if "max_attempts" in self.options:
                raise ImproperlyConfigured(f"{where}: set MAX_ATTEMPTS or OPTIONS['max_attempts'], not both.")
            self.options["max_attempts"] = retries["MAX_ATTEMPTS"]
        if problem := job_options_problem(**self.options):
            raise ImproperlyConfigured(f"{where}['OPTIONS']: {problem}.")
        #: Every task's backoff unless it has its own (``SQLQueueTask.backoff``).
        self.backoff: Backoff | None = _imported_backoff(where, retries.get("BACKOFF"))

    def validate_task(self, task: Task[..., Any]) -> None:
        """Django's rules, then ours (queue names, ``SQLQUEUE_QUEUES``, option ranges).
        Only checks: a task of ours registers itself once valid (``SQLQueueTask``)."""
        super().validate_task(task)
        if problem := (
            job_options_problem(queue=task.queue_name, **_own_options(task))
            or tags_problem(getattr(task, "tags", ()))
            or backoff_problem(getattr(task, "backoff", None))
        ):
            raise InvalidTask(f"{task.module_path}: {problem}.")

    def enqueue(self, task: Task[_P, _R], args: list[Any], kwargs: dict[str, Any]) -> TaskResult[_P, _R]:
        """Write the job on the caller's connection, inside the caller's transaction;
        ``task_enqueued`` is sent once that commits (at once outside one), as our
        ``job_enqueued`` is: never for a job a rollback undid, nor for a unique task's
        enqueue that returned the result of the job holding its key.

        Raises ``InvalidTask``, or ``InvalidJobError`` for arguments, tags or meta that
        are not plain JSON, or arguments that the task's function cannot take."""
        from django_sqlqueue.models import Job

        self.validate_task(task)
        job = Job.objects.enqueue(task.func, args, kwargs, **self._job_options(task))
        result = job_result(job, task, backend=self.alias)
        if job.created:
            sender = type(self)
            transaction.on_commit(
                lambda: send(task_enqueued, sender, task.module_path, task_result=result), using=job._state.db
            )
        return result

    def check_enqueue(self, task: Task[..., Any], args: list[Any], kwargs: dict[str, Any]) -> None:
        """Raise what :meth:`enqueue` would for these arguments and options, writing
        nothing: what ``enqueue_on_commit`` checks before it waits for the commit."""
        from django_sqlqueue.db.building import validate
        from django_sqlqueue.models import Job

        self.validate_task(task)
        validate(Job.objects.build(task.func, args, kwargs, **self._job_options(task)))

    @property
    def database(self) -> str:
        """The database alias the jobs are written to (``router.db_for_write(Job)``)."""
        from django_sqlqueue.models import Job

        return str(Job.objects.on_queue_db().db)

    def save_metadata(self, task_result: TaskResult[..., Any], metadata: dict[str, Any]) -> None:
        """Django's ``TaskContext.save_metadata()``: ``metadata`` (its reserved keys too)
        becomes the job's ``meta`` (``backends.metadata.save_meta``)."""
        save_meta(task_result.id, metadata)

    def _job_options(self, task: Task[..., Any]) -> dict[str, Any]:
        """What ``Job.objects.enqueue`` is given for an enqueue of ``task``."""
        options = {name: value for name, value in _own_options(task).items() if value is not None}
        return {
            "queue": task.queue_name,
            "priority": task.priority,
            "run_at": task.run_after,
            **self.options,
            **options,
            **_dependencies(task),
            "tags": getattr(task, "tags", ()),
            "meta": enqueue_meta(task),
        }

    def get_result(self, result_id: str) -> TaskResult[..., Any]:
        """The job's current state, read from its row.

        Raises ``TaskResultDoesNotExist`` for an id that is no job (one deleted by
        ``SQLQUEUE_RETENTION``, or pruned, is none), or a job that does not run a
        registered Django task."""
        from django_sqlqueue.models import Job

        result_id = str(result_id)
        job = Job.objects.filter(pk=int(result_id)).first() if result_id.isascii() and result_id.isdigit() else None
        if job is None:
            raise TaskResultDoesNotExist(result_id)
        try:
            task = get_task(job.task).django_task
        except UnknownTaskError:
            task = None
        if task is None:
            raise TaskResultDoesNotExist(f"Job {result_id} runs {job.task!r}, which is not a registered Django task.")
        return job_result(job, task, backend=self.alias)

    def run_job(self, task: Task[..., Any], job: Job, worker_id: str) -> Any:
        """Run a claimed job of ``task`` in ``worker_id``, with Django's task signals
        around it: what the runner asks of the backend of a Django task
        (``runner.execution.TaskBackend``), so that it never imports this adapter."""
        return self._run_task(task, job, worker_id, backend=self.alias, sender=type(self))

    @functools.cached_property
    def _run_task(self) -> Callable[..., Any]:
        """``backends.running.run_task``, imported on the first job rather than with this
        module: it imports the models, which load after it."""
        from django_sqlqueue.backends.running import run_task

        return run_task


def _own_options(task: Task[..., Any]) -> dict[str, Any]:
    # A Task made directly rather than by @task may be Django's own class, without them.
    return {name: getattr(task, name, None) for name in JOB_OPTIONS}


def _retry_settings(where: str, params: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """``MAX_ATTEMPTS`` and ``BACKOFF``, from ``OPTIONS`` or beside it (not both)."""
    if both := sorted(name for name in RETRY_SETTINGS if name in params and name in options):
        raise ImproperlyConfigured(f"{where}: set {', '.join(both)} in OPTIONS or beside it, not both.")
    return {name: source[name] for source in (params, options) for name in RETRY_SETTINGS if name in source}


def _imported_backoff(where: str, backoff: Any) -> Backoff | None:
    """``BACKOFF`` as a callable: imported when it is a dotted path, and checked."""
    if isinstance(backoff, str):
        try:
            backoff = import_string(backoff)
        except ImportError as error:
            raise ImproperlyConfigured(f"{where}: BACKOFF {backoff!r} cannot be imported: {error}") from error
    if problem := backoff_problem(backoff):
        raise ImproperlyConfigured(f"{where}: BACKOFF: {problem}.")
    return backoff  # type: ignore[no-any-return]


def _dependencies(task: Task[..., Any]) -> dict[str, Any]:
    """``after`` as job ids (a task result's id is its job's), and ``after_failure``."""
    after = [getattr(parent, "id", parent) for parent in getattr(task, "after", ())]
    ids = [int(parent) if isinstance(parent, str) and parent.isdigit() else parent for parent in after]
    return {"after": ids, "after_failure": getattr(task, "after_failure", None)} if ids else {}


def _unregistered(task: Task[..., Any]) -> bool:
    """Whether ``task``'s function is not yet a registered task (``using()`` makes a
    copy of a task: the function is registered once)."""
    try:
        get_task(task.func)
    except UnknownTaskError:
        return True
    return False
