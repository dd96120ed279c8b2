"""The registry of tasks: the only functions a worker will ever run.

A row in the jobs table names its task by a registered name. Workers look that name
up here and never import anything a row names, so a tampered or stale row cannot
make a worker import or call arbitrary code."""

from __future__ import annotations

import datetime
import functools
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any, TypeVar, overload

from asgiref.sync import iscoroutinefunction
from django.apps import apps
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import module_has_submodule

from django_sqlqueue.exceptions import TaskModuleError, UnknownTaskError
from django_sqlqueue.rules.backoff import Backoff, backoff_problem
from django_sqlqueue.rules.limits import TASK_NAME_MAX_LENGTH
from django_sqlqueue.rules.rates import rate_limit_name_problem
from django_sqlqueue.rules.tags import merged, tags_problem
from django_sqlqueue.rules.validation import (
    concurrency_names_problem,
    concurrency_problem,
    job_options_problem,
    unique_until_problem,
)

if TYPE_CHECKING:
    from django_sqlqueue.backends.compat import Task as DjangoTask

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger(__name__)

#: How many shapes of arguments (how many positional, which names) a task remembers
#: the binding of: every shape a producer uses, short of one that makes up new names.
BINDING_SHAPES_KEPT = 1000


@dataclass(frozen=True)
class RegisteredTask:
    """A registered function and the defaults its jobs get; ``None`` means the setting's default."""

    name: str
    func: Callable[..., Any]
    queue: str | None = None
    priority: int | None = None
    max_attempts: int | None = None
    timeout: float | None = None
    #: How many times a job may snooze (``raise Snooze``) before it is ``FAILED``.
    max_snoozes: int | None = None
    #: The arguments a job's concurrency key is made of, and the jobs a key may run at once.
    concurrency: tuple[str, ...] | None = None
    concurrency_limit: int | None = None
    #: The name of its ``SQLQUEUE_RATE_LIMITS`` entry: its jobs start no faster than that.
    rate_limit: str | None = None
    #: The Django Tasks ``Task`` when ``func`` was registered by Django's ``@task``.
    django_task: DjangoTask[..., Any] | None = None
    #: The arguments whose values make a job's ``unique_key`` (see :meth:`unique_key`).
    unique: tuple[str, ...] | None = None
    #: Whether the queue is part of that key too.
    unique_queue: bool = False
    #: ``"pruned"``: its jobs keep their key after they end, until they are pruned.
    unique_until: str | None = None
    #: Seconds after the enqueue (the database's clock) from which its jobs are never started.
    expires_in: float | None = None
    #: Every job of it has these tags, and those its enqueue adds.
    tags: tuple[str, ...] = ()
    #: ``@job(atomic=...)``: True, or the alias of the database the task writes to, for a
    #: task run inside a transaction on the jobs table's database with its success written
    #: in it (``runner/completion.py``); False for a task run outside any transaction.
    atomic: bool | str = False
    #: ``backoff(exception, job)``: the delay before a failed job's next attempt, or None
    #: for none (``rules.backoff``); ``None``: ``SQLQUEUE_RETRY_BACKOFF``'s doubling.
    backoff: Backoff | None = None

    @functools.cached_property
    def signature(self) -> inspect.Signature | None:
        """The arguments a job of this task is called with: ``func``'s signature, less the
        context a Django task that ``takes_context`` gets first; None when Python cannot
        read it (some builtins). Read once per task, as every enqueue binds to it."""
        try:
            signature = inspect.signature(self.func)
        except (TypeError, ValueError):
            return None
        if self.django_task is not None and self.django_task.takes_context:
            return signature.replace(parameters=list(signature.parameters.values())[1:])
        return signature

    @functools.cached_property
    def is_coroutine(self) -> bool:
        """Whether ``func`` is a coroutine function, which a worker runs to its end in an
        event loop of its own. Asked once per task: asked for every job, it was a
        noticeable part of a short job's run."""
        return iscoroutinefunction(self.func)

    @functools.cached_property
    def _binding_problems(self) -> dict[tuple[int, tuple[str, ...]], str | None]:
        return {}

    def binding_problem(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
        """Why a worker could not call the task with ``args`` and ``kwargs`` (an argument
        missing, unexpected or given twice), or None: so that such a job is refused when
        it is enqueued, not failed with ``TypeError`` by every attempt.

        Whether arguments bind depends on how many are positional and which names are
        given, not on their values: the answer is remembered for each such shape (for
        the first :data:`BINDING_SHAPES_KEPT`), as ``Signature.bind`` costs more than the
        rest of an enqueue's checks."""
        shape = (len(args), tuple(kwargs))
        known = self._binding_problems
        try:
            return known[shape]
        except KeyError:
            pass
        problem = self._bind(args, kwargs)
        if len(known) < BINDING_SHAPES_KEPT:
            known[shape] = problem
        return problem

    def _bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str | None:
        signature = self.signature
        if signature is None:
            return None
        try:
            signature.bind(*args, **kwargs)
        except TypeError as error:
            problem = str(error)
        else:
            return None
        if problem == "too many positional arguments":  # Python names no argument here: say how many
            takes = [p.name for p in signature.parameters.values() if p.kind <= p.POSITIONAL_OR_KEYWORD]
            most = f"{len(takes)} ({', '.join(takes)})" if takes else "none"
            problem = f"{len(args)} positional arguments given, but it takes {most}"
        if unexpected := _unexpected_keywords(signature, kwargs):
            # Python names the first problem only: a misspelled keyword shows as the
            # argument it misses, so name the keywords it cannot take too.
            named = ", ".join(repr(name) for name in unexpected)
            many = "unexpected keyword arguments" if unexpected[1:] else "an unexpected keyword argument"
            extra = f"{many} {named}"
            problem = f"got {extra}" if problem.startswith("got an unexpected") else f"{problem}, and got {extra}"
        plain = signature.replace(
            parameters=[p.replace(annotation=p.empty) for p in signature.parameters.values()],
            return_annotation=signature.empty,
        )
        return f"its arguments do not fit {getattr(self.func, '__name__', self.name)}{plain}: {problem}"


def _unexpected_keywords(signature: inspect.Signature, kwargs: Mapping[str, Any]) -> list[str]:
    """The names in ``kwargs`` that no parameter of ``signature`` takes by keyword."""
    parameters = signature.parameters
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return []
    keyword = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [name for name in kwargs if name not in parameters or parameters[name].kind not in keyword]


_tasks_by_name: dict[str, RegisteredTask] = {}
#: The tasks registered with ``@job(atomic="alias")``, by name, with that alias: an
#: enqueue refuses their jobs on any other database. Empty in most projects, so that the
#: enqueue of every other job asks nothing.
atomic_aliases: dict[str, str] = {}
_tasks_by_func: dict[Callable[..., Any], RegisteredTask] = {}
#: The tasks registered from a module a worker does not import, by name, with that
#: module: each is warned about at its first enqueue in the process, then forgotten.
_unreached: dict[str, str] = {}
#: Whether :func:`autodiscover` is importing the tasks modules: what registers then,
#: registers in a worker too.
_discovering = False


def _reached_by_workers(module: str) -> bool:
    """Whether a worker imports ``module`` as it starts: Django's start imports the apps
    and their models (apps not ready yet), and :func:`autodiscover` each installed app's
    ``tasks`` module, with what it imports."""
    if _discovering or not apps.ready:
        return True
    return any(
        module == f"{app.name}.tasks" or module.startswith(f"{app.name}.tasks.") for app in apps.get_app_configs()
    )


def _warn_if_unreached(task: RegisteredTask) -> None:
    if (module := _unreached.pop(task.name, None)) is not None:
        logger.warning(
            "Task %r is registered in %s, which the workers never import: its jobs would fail with "
            "UnknownTaskError. Define it in an installed app's tasks module (tasks.py), and import it from there.",
            task.name,
            module,
        )


def atomic_problem(atomic: object) -> str | None:
    """Why ``atomic`` is no ``@job(atomic=...)``: it takes True or False, or the alias of
    a database of ``settings.DATABASES`` (the one the task writes to); None when it is one."""
    if isinstance(atomic, bool):
        return None
    if not isinstance(atomic, str):
        return f"atomic must be True, False or a database alias, not {atomic!r}"
    if atomic not in settings.DATABASES:
        return f"atomic={atomic!r} names no database of settings.DATABASES ({', '.join(settings.DATABASES)})"
    return None


def atomic_elsewhere(task: str, using: str) -> str | None:
    """Why a job of ``task`` cannot be run atomically on the jobs table of database
    ``using`` (the task said, with ``@job(atomic="alias")``, that it writes to another
    database, which no transaction of the jobs' can hold), or None."""
    alias = atomic_aliases.get(task)
    if alias is None or alias == using:
        return None
    return (
        f"{task} has @job(atomic={alias!r}): its writes and its success are committed in one transaction, "
        f"which only a task writing to the jobs table's database can have, but its jobs are on {using!r}. "
        f"Enqueue them on {alias!r} (a database router's db_for_write for the Job model, or "
        f"Job.objects.using({alias!r})), or drop atomic"
    )


def default_name(func: Callable[..., Any]) -> str:
    """The name a task is registered under when ``@job`` is not given one."""
    return f"{func.__module__}.{func.__qualname__}"


def register(
    func: Callable[..., Any], *, django_task: DjangoTask[..., Any] | None = None, **options: Any
) -> RegisteredTask:
    """Register ``func``; re-registering the same function (a module reload) is harmless.

    ``django_task`` is the Django Tasks ``Task`` wrapping ``func``, registered by our backend."""
    name = options.pop("name", None) or default_name(func)
    if len(name) > TASK_NAME_MAX_LENGTH:
        raise ImproperlyConfigured(f"Task name {name!r} is longer than {TASK_NAME_MAX_LENGTH} characters.")
    if "<locals>" in name:
        raise ImproperlyConfigured(
            f"Cannot register {name!r}: a function defined inside another function cannot be found by a "
            "worker. Define it at module level."
        )
    unique = options.pop("unique", None)
    if unique is not None:
        names = inspect.signature(func).parameters
        unique = tuple(names) if unique is True else () if isinstance(unique, (str, bool)) else tuple(unique)
        if not unique or not set(unique) <= set(names):
            raise ImproperlyConfigured(
                f"@job on {name!r}: unique must be True or names of its arguments {list(names)}."
            )
    concurrency = options.pop("concurrency", None)
    limit = options.get("concurrency_limit")
    expires_in = options.get("expires_in")
    if isinstance(expires_in, datetime.timedelta):
        options["expires_in"] = expires_in.total_seconds()
    # Not job_options_problem's:
    own = {"concurrency_limit", "rate_limit", "unique_queue", "unique_until", "tags", "atomic", "backoff"}
    if problem := (
        job_options_problem(**{key: value for key, value in options.items() if key not in own})
        or concurrency_names_problem(func, concurrency, limit)
        or (concurrency_problem(name, limit) if limit is not None else None)
        or rate_limit_name_problem(options.get("rate_limit"))
        or unique_until_problem(options.get("unique_until"))
        or tags_problem(options.get("tags", ()))
        or backoff_problem(options.get("backoff"))
    ):
        raise ImproperlyConfigured(f"@job on {name!r}: {problem}.")
    if problem := atomic_problem(options.get("atomic", False)):
        raise ImproperlyConfigured(f"@job on {name!r}: {problem}.")
    if concurrency is not None:
        options["concurrency"] = tuple(concurrency)
    if "tags" in options:
        options["tags"] = merged(options["tags"])
    existing = _tasks_by_name.get(name)
    if existing is not None and default_name(existing.func) != default_name(func):
        raise ImproperlyConfigured(f"Task name {name!r} is already registered for {default_name(existing.func)}.")
    task = RegisteredTask(name=name, func=func, django_task=django_task, unique=unique, **options)
    _tasks_by_name[name] = task
    _tasks_by_func[func] = task
    if isinstance(task.atomic, str):
        atomic_aliases[name] = task.atomic
    else:
        atomic_aliases.pop(name, None)
    if _reached_by_workers(func.__module__):
        _unreached.pop(name, None)
    else:
        _unreached[name] = func.__module__
    return task


@overload
def job(func: F, /) -> F: ...
@overload
def job(
    *,
    name: str | None = None,
    queue: str | None = None,
    priority: int | None = None,
    max_attempts: int | None = None,
    timeout: float | None = None,
    max_snoozes: int | None = None,
    concurrency: tuple[str, ...] | None = None,
    concurrency_limit: int | None = None,
    rate_limit: str | None = None,
    unique: bool | Sequence[str] | None = None,
    unique_queue: bool = False,
    unique_until: str | None = None,
    expires_in: float | datetime.timedelta | None = None,
    tags: Sequence[str] = (),
    atomic: bool | str = False,
    backoff: Backoff | None = None,
) -> Callable[[F], F]: ...
def job(func: F | None = None, /, **options: Any) -> F | Callable[[F], F]:
    """Register a function as a task: ``@job`` or ``@job(queue=..., priority=..., max_attempts=..., timeout=...)``.

    ``concurrency_limit=n`` runs at most ``n`` of its jobs at once; with
    ``concurrency=("tenant_id",)``, at most ``n`` per value of those arguments.
    ``rate_limit="payments"`` starts its jobs no faster than ``SQLQUEUE_RATE_LIMITS["payments"]``.
    ``unique=("order_id",)`` (or ``True``: all its arguments) gives each job a
    ``unique_key`` made from those arguments (see ``RegisteredTask.unique_key``), held
    while the job is ready or running, or with ``unique_until="pruned"`` until it is pruned.
    ``max_snoozes=n``: a job that snoozes (``raise Snooze(delay)``) more than ``n`` times
    is ``FAILED`` (default ``SQLQUEUE_MAX_SNOOZES``).
    ``expires_in=60`` (seconds or a timedelta): a job not started within that time of its
    enqueue is never started (see the Expiry guide); an enqueue's own expiry overrides it.
    ``tags=("import",)`` tags each of its jobs (and an enqueue's ``tags`` add to them).
    ``atomic=True`` runs the task inside a transaction on the jobs table's database and
    writes its success in that transaction: its writes there commit with its success or
    not at all (see the Transactional completion guide). ``atomic="alias"`` says which
    database the task writes to: an enqueue on another database is refused.
    ``backoff=fn``: ``fn(exception, job)`` returns the delay (seconds or a timedelta)
    before a failed job's next attempt, or None for no more retries (``rules.backoff``).

    The function is returned unchanged, so it can still be called directly."""
    if func is not None:
        register(func)
        return func

    def decorator(f: F) -> F:
        register(f, **options)
        return f

    return decorator


@functools.cache
def autodiscover() -> None:
    """Import the ``tasks`` module of every installed app, once per process.

    Raises :class:`TaskModuleError` naming the module that failed, and its error."""
    global _discovering  # one flag for the process, as the registry is one
    _discovering = True
    try:
        for app_config in apps.get_app_configs():
            if module_has_submodule(app_config.module, "tasks"):
                name = f"{app_config.name}.tasks"
                try:
                    import_module(name)
                except Exception as error:
                    raise TaskModuleError(f"Importing {name} failed: {type(error).__name__}: {error}") from error
    finally:
        _discovering = False


def registered_tasks() -> list[RegisteredTask]:
    """Every registered task, the installed apps' ``tasks`` modules imported first."""
    autodiscover()
    return list(_tasks_by_name.values())


def get_task(task: Callable[..., Any] | str) -> RegisteredTask:
    """The registered task for a function or a name; raises :class:`UnknownTaskError`."""
    if not isinstance(task, str):
        try:
            found = _tasks_by_func.get(task)
        except TypeError:  # unhashable: no function
            found = None
        if found is None:
            shown = default_name(task) if hasattr(task, "__qualname__") else f"{task!r:.100}"
            raise UnknownTaskError(f"{shown} is not a registered task: decorate it with @django_sqlqueue.job.")
        if _unreached:
            _warn_if_unreached(found)
        return found
    if task not in _tasks_by_name:
        autodiscover()
    try:
        found = _tasks_by_name[task]
    except KeyError:
        raise UnknownTaskError(
            f"No task is registered as {task!r}. Tasks are registered by @django_sqlqueue.job, or by Django's "
            "@task with the SQLQueueBackend, in a module that is imported: an installed app's tasks.py is "
            "imported for you."
        ) from None
    if _unreached:
        _warn_if_unreached(found)
    return found
