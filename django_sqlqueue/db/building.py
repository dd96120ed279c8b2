"""New jobs, built and checked before they are written: the options a job gets when
its enqueue names none (its task's ``@job(...)``, then the settings), its run and
expiry times, the ``SQLQUEUE_ENQUEUE_HOOKS`` it goes through, and the checks it passes
again just before it is written (a caller may change a built job).

The manager's enqueueing verbs (``django_sqlqueue.managers.enqueueing``) call these for every
job, hundreds of thousands at a time: what follows from the settings and the task is
worked out once (:func:`remembered`, and :func:`validate`'s ``seen``), not for each job."""

from __future__ import annotations

import copy
import datetime
import operator
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, cast

from django.conf import settings

from django_sqlqueue.conf import conf, remembered
from django_sqlqueue.db import batches, instances
from django_sqlqueue.db.clock import DatabaseNowPlus
from django_sqlqueue.exceptions import InvalidJobError
from django_sqlqueue.rules.failures import error_message
from django_sqlqueue.rules.registry import RegisteredTask, get_task
from django_sqlqueue.rules.tags import tags_problem
from django_sqlqueue.rules.user_code import contained, name_of, runner_enqueueing
from django_sqlqueue.rules.validation import (
    arguments_problem,
    concurrency_problem,
    delay_problem,
    expiry_problem,
    job_options_problem,
    meta_problem,
    run_at_problem,
    unique_key_problem,
)

if TYPE_CHECKING:
    from django_sqlqueue.db.schema.table import AbstractJob, JobT


class PlainOptions(TypedDict, total=False):
    """The options a job's row holds beside its arguments, and all that
    :meth:`JobManager.enqueue_rows` takes (the same for every row). One left out or
    ``None`` comes from the task's ``@job(...)``, then from settings."""

    #: The queue it waits on (default: the task's, else ``SQLQUEUE_DEFAULT_QUEUE``).
    queue: str | None
    #: Higher runs first (default: the task's, else 0).
    priority: int | None
    #: When the job may run first (aware when ``USE_TZ`` is on); not with ``delay``.
    run_at: datetime.datetime | None
    #: Seconds (or a timedelta) from the database's now; not with ``run_at``.
    delay: datetime.timedelta | float | None
    #: Attempts before it is ``FAILED`` (default: the task's, else ``SQLQUEUE_MAX_ATTEMPTS``).
    max_attempts: int | None
    #: Seconds (or a timedelta) an attempt may run (default: the task's, else ``SQLQUEUE_TIMEOUT``).
    timeout: datetime.timedelta | float | None
    #: Never started from this time on (aware when ``USE_TZ`` is on): it ends ``CANCELLED``,
    #: ``end_reason`` "expired"; not with ``expires_in``.
    expires_at: datetime.datetime | None
    #: Seconds (or a timedelta) from the database's now to its ``expires_at``.
    expires_in: datetime.timedelta | float | None
    #: Free JSON shown on its admin page (default ``{}``); its task may add to it.
    meta: dict[str, Any] | None


class JobOptions(PlainOptions, total=False):
    """The options of :meth:`JobManager.enqueue` and :meth:`JobManager.build`: those of
    :class:`PlainOptions`, and a job's keys."""

    #: Never more than ``concurrency_limit`` jobs with this key run at once.
    concurrency_key: str | None
    #: How many jobs with its ``concurrency_key`` may run at once.
    concurrency_limit: int | None
    #: At most one ready or running job has it (default: derived by ``@job(unique=...)``).
    unique_key: str | None
    #: ``"pruned"``: the job keeps its key after it ends, until it is pruned (default ``"finished"``).
    unique_until: str | None
    #: Jobs (saved, of the same database) or ids it waits for: it runs once they have all finished.
    after: Iterable[Any] | None
    #: ``"cancel"`` (default): cancelled when one of ``after`` fails; ``"run"``: runs all the same.
    after_failure: str | None
    #: Added to the task's ``@job(tags=...)``; ``Job.objects.tagged(tag)`` finds the job by any.
    tags: Sequence[str] | None
    #: The batch (a ``JobBatch`` or its id) it joins; inside ``with Job.objects.batch()``, the open one.
    batch: Any | None


def unkeyed(model: type[JobT], registered: RegisteredTask, args: Any, kwargs: Any, options: PlainOptions) -> JobT:
    """An unsaved ``model`` job of ``registered`` with its options filled in as
    ``JobManager.build`` says (those of ``options``; a :class:`JobOptions`' keys are
    left for the caller), and no concurrency or unique key yet."""
    run_at, delay = options.get("run_at"), options.get("delay")
    if run_at is not None and delay is not None:
        raise InvalidJobError("Pass run_at or delay, not both.")
    defaults = _TaskDefaults.of(registered)
    job = instances.unsaved(model, task=registered.name, args=args, kwargs=kwargs, **defaults.under(options))
    if run_at is not None:
        job.run_at = _checked_run_at(run_at)
    elif delay is not None:
        job.run_at = DatabaseNowPlus(_checked_delay(delay))
    expires_at, expires_in = options.get("expires_at"), options.get("expires_in")
    if expires_at is None and expires_in is None:
        expires_in = registered.expires_in
    if (expires_at is not None or expires_in is not None) and (
        problem := expiry_problem(
            expires_at=expires_at, expires_in=expires_in, run_at=run_at, delay=delay, use_tz=settings.USE_TZ
        )
    ):
        raise InvalidJobError(f"Cannot enqueue {registered.name}: {problem}.")
    if expires_in is not None:
        job.expires_at = DatabaseNowPlus(_checked_delay(expires_in))
    else:
        job.expires_at = expires_at
    meta = options.get("meta")
    job.meta = {} if meta is None else meta
    return job


def copy_of_template(
    model: type[JobT],
    registered: RegisteredTask,
    args: Any,
    kwargs: Any,
    options: tuple[Any, ...],
    build: Callable[..., JobT],
) -> tuple[JobT, JobTemplate] | None:
    """The job ``build(task, args, kwargs)`` makes when no option is given but those of
    ``options`` (the queue, priority, max_attempts and timeout it names, or None), as
    most of ``enqueue_many``'s jobs are built (``args`` and ``kwargs`` as build() made
    them its own): a copy of the job ``build`` built the long way once for these
    options (and the settings in force), with these arguments, in the batch open now;
    with the template it copies, whose :attr:`~JobTemplate.arguments_checked` says
    whether the copy needs only its arguments checked. Working each option out again
    for every job was a large share of ``enqueue_many``'s time.

    None where a copy would not be that job: the task derives a key from the arguments
    (``@job(unique=...)``, ``@job(concurrency=...)``), a receiver of the model's init
    signals would miss the copies, or the template is another model's or of a task
    registered again since (a module reloaded); and where ``options`` are no value to
    look a template up by, or the task has :data:`MOST_TEMPLATES` already (a caller
    naming a new queue or priority for every job), so the long way says what is wrong
    with them, and memory stays bounded."""
    if registered.unique is not None or registered.concurrency or instances.init_heard(model):
        return None
    templates: dict[tuple[Any, ...], JobTemplate] = remembered(("job templates", registered.name), dict)
    # With their types: True is 1 to a dict, but a priority only to the long way's checks.
    key = (*options, *map(type, options))
    try:
        template = templates.get(key)
    except TypeError:  # an option that is no hashable value
        return None
    if template is None:
        if len(templates) >= MOST_TEMPLATES:
            return None
        queue, priority, max_attempts, timeout = options
        # meta={} (what None gives) builds the template the long way.
        made = build(
            registered.name, queue=queue, priority=priority, max_attempts=max_attempts, timeout=timeout, meta={}
        )
        template = templates[key] = JobTemplate.of(made)
    if template.task is not registered or template.model is not model:
        return None
    job = instances.copied(
        model,
        template.attributes,
        args=args,
        kwargs=kwargs,
        meta={},
        batch_id=batches.OPEN.get(),
    )
    return job, template


#: The most templates :func:`copy_of_template` keeps for one task: one for each combination of
#: options its jobs are built with, which is a handful in most projects.
MOST_TEMPLATES = 64


class JobTemplate(NamedTuple):
    """A job built with no arguments and no option but common ones (or none): what
    :func:`copy_of_template` copies, made again with the settings (it is kept beside them)."""

    task: RegisteredTask
    model: type[AbstractJob]
    attributes: dict[str, Any]
    #: Whether a copy passes every check of :func:`validate` once its arguments pass:
    #: the template passed them all, and no enqueue hook may change a copy before it
    #: is checked. A copy differs from its template in its arguments alone (its meta
    #: is empty, its batch is checked as it is written).
    arguments_checked: bool

    @classmethod
    def of(cls, job: AbstractJob) -> JobTemplate:
        attributes = {name: value for name, value in job.__dict__.items() if name != "_state"}
        try:
            validate(job, bind=False)
        except InvalidJobError:  # each copy is refused the long way, with its own arguments named
            passed = False
        else:
            passed = True
        return cls(get_task(job.task), type(job), attributes, passed and not _hooks())


class _TaskDefaults(NamedTuple):
    """The options a job of ``task`` gets when its enqueue names none: the task's own
    ``@job(...)`` options, else the settings'. Worked out once per settings in force
    (:func:`remembered`), not for every job built."""

    task: RegisteredTask
    queue: str
    priority: int
    max_attempts: int
    timeout: float | None

    @classmethod
    def of(cls, task: RegisteredTask) -> _TaskDefaults:
        defaults = remembered(("task defaults", task.name), lambda: cls.made(task))
        # A task registered again (a module reload) has other options under its name.
        return defaults if defaults.task is task else cls.made(task)

    @classmethod
    def made(cls, task: RegisteredTask) -> _TaskDefaults:
        return cls(
            task,
            queue=first(task.queue, conf.SQLQUEUE_DEFAULT_QUEUE),
            priority=first(task.priority, 0),
            max_attempts=first(task.max_attempts, conf.SQLQUEUE_MAX_ATTEMPTS),
            timeout=_seconds(first(task.timeout, conf.SQLQUEUE_TIMEOUT)),
        )

    def under(self, options: PlainOptions) -> dict[str, Any]:
        """The job's options: those ``options`` gives (not None), else these."""
        queue, priority = options.get("queue"), options.get("priority")
        max_attempts, timeout = options.get("max_attempts"), options.get("timeout")
        return {
            "queue": self.queue if queue is None else queue,
            "priority": self.priority if priority is None else priority,
            "max_attempts": self.max_attempts if max_attempts is None else max_attempts,
            "timeout": self.timeout if timeout is None else _seconds(timeout),
        }


def first(*values: Any) -> Any:
    """The first of ``values`` that is not None (an option from the call, then the
    task's, then the default), or None."""
    return next((value for value in values if value is not None), None)


def _seconds(value: Any) -> Any:
    return value.total_seconds() if isinstance(value, datetime.timedelta) else value


def _checked_run_at(run_at: Any) -> datetime.datetime:
    if problem := run_at_problem(run_at, use_tz=settings.USE_TZ):
        raise InvalidJobError(f"{problem}.")
    return cast("datetime.datetime", run_at)


def _checked_delay(delay: Any) -> datetime.timedelta:
    if problem := delay_problem(delay):
        raise InvalidJobError(f"{problem}.")
    return delay if isinstance(delay, datetime.timedelta) else datetime.timedelta(seconds=delay)


def _expires_at_problem(expires_at: Any) -> str | None:
    """An ``expires_at`` set on a built job since: None, an expression (the database's
    now plus an ``expires_in`` build() checked) or a time."""
    if expires_at is None or hasattr(expires_at, "resolve_expression"):
        return None
    return run_at_problem(expires_at, use_tz=settings.USE_TZ, name="expires_at")


def hooked(jobs: Iterable[AbstractJob]) -> None:
    """Pass each of ``jobs`` to the ``SQLQUEUE_ENQUEUE_HOOKS``, in order, before they
    are checked: what a hook sets is checked as the caller's own. The setting's
    callables are looked up once per settings in force, not on every enqueue. A hook's
    exception goes to the caller, except in ``rules.user_code.runner_enqueues()``."""
    if hooks := _hooks():
        runners = runner_enqueueing()
        for job in jobs:
            for hook in hooks:
                if runners:
                    _hooked_safely(hook, job)
                else:
                    hook(job)


def _hooks() -> tuple[Callable[[Any], Any], ...]:
    """The ``SQLQUEUE_ENQUEUE_HOOKS`` in force."""
    return remembered(("enqueue hooks", ""), lambda: conf.SQLQUEUE_ENQUEUE_HOOKS)


#: The key of a job's ``meta`` that records the enqueue hooks that raised on it.
HOOK_ERRORS = "sqlqueue_enqueue_hook_errors"
#: The most characters of a hook's exception kept in that record.
HOOK_ERROR_CHARS = 500


def _hooked_safely(hook: Callable[[Any], Any], job: AbstractJob) -> None:
    """Pass ``job`` to ``hook``; if it raises, log it and put the job back as it was
    before the hook (its fields, and its ``meta`` a hook may have changed in place),
    recording on the job, in ``meta[HOOK_ERRORS]`` (shown on its admin page), which
    hook raised what."""
    fields, meta = dict(job.__dict__), copy.deepcopy(job.meta)
    name = name_of(hook)
    with contained(
        "SQLQUEUE_ENQUEUE_HOOKS: %s, given a %s job the runner enqueues,",
        name,
        job.task,
        then="the job is enqueued without that hook's changes",
    ) as caught:
        hook(job)
    if caught.error is not None:
        job.__dict__.update(fields)
        kept = meta if isinstance(meta, dict) else {}
        # As a failed attempt's message is kept: what every database stores, even when
        # the exception's ``__str__`` raises.
        error = f"{type(caught.error).__qualname__}: {error_message(caught.error)}"[:HOOK_ERROR_CHARS]
        earlier = kept.get(HOOK_ERRORS)
        record = [*(earlier if isinstance(earlier, list) else []), {"hook": name, "error": error}]
        job.meta = {**kept, HOOK_ERRORS: record}


def validate(job: AbstractJob, *, bind: bool = True, seen: dict[tuple[Any, ...], RegisteredTask] | None = None) -> None:
    """Everything :meth:`JobManager.build` checks, checked again on the job as it is
    now: ``enqueue_many`` takes jobs a caller may have changed since. With ``bind`` (not
    for a template without arguments), the arguments must fit the task's function too.
    ``seen`` maps the task and options (with their types) of jobs checked before, which
    most jobs of one ``enqueue_many`` share, to their registered task: looked up and
    checked once, not for every job."""
    shared = _SHARED(job)
    # With their types: True is 1 to a dict, and a good priority, but not to the check.
    key = (*shared, *map(type, shared))
    try:
        registered = None if seen is None else seen.get(key)
    except TypeError:  # an option that is no hashable value: the checks below say what is wrong
        registered, seen = None, None
    known = registered is not None
    if registered is None:
        registered = get_task(job.task)
    missing = [] if known else [name for name in ("queue", "priority", "max_attempts") if getattr(job, name) is None]
    if missing:
        problem: str | None = f"{', '.join(missing)} not set: make jobs with Job.objects.build()"
    else:
        problem = (
            (_arguments_problem(job, registered) if bind else arguments_problem(job.args, job.kwargs))
            or (None if known else _options_problem(job))
            # No meta and no tags, as most jobs have, without a call each.
            or (None if job.meta == {} else meta_problem(job.meta))
            or (None if job.new_tags == () else tags_problem(job.new_tags))
            or _expires_at_problem(job.expires_at)
            # An expression is the database's now, or now plus a delay build() checked.
            or (
                None
                if hasattr(job.run_at, "resolve_expression")
                else run_at_problem(job.run_at, use_tz=settings.USE_TZ)
            )
        )
    if problem:
        raise InvalidJobError(f"Cannot enqueue {job.task}: {problem}.")
    if seen is not None and not known:
        seen[key] = registered


def check_arguments(job: AbstractJob, registered: RegisteredTask) -> None:
    """What :func:`validate` checks of a copy of a template whose
    :attr:`~JobTemplate.arguments_checked` is set, ``registered`` its task: its arguments."""
    if problem := _arguments_problem(job, registered):
        raise InvalidJobError(f"Cannot enqueue {job.task}: {problem}.")


def _arguments_problem(job: AbstractJob, registered: RegisteredTask) -> str | None:
    """Why ``job``'s arguments cannot be stored, or do not fit its task's function, or None."""
    return arguments_problem(job.args, job.kwargs) or registered.binding_problem(job.args, job.kwargs)


#: A job's task and the options :func:`validate` checks once for all the jobs that share them.
_SHARED = operator.attrgetter(
    "task", "queue", "priority", "max_attempts", "timeout", "concurrency_key", "concurrency_limit", "unique_key"
)


def _options_problem(job: AbstractJob) -> str | None:
    return (
        job_options_problem(queue=job.queue, priority=job.priority, max_attempts=job.max_attempts, timeout=job.timeout)
        or concurrency_problem(job.concurrency_key, job.concurrency_limit)
        or unique_key_problem(job.unique_key)
    )
