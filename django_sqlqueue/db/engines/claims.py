"""What an engine's claim is given: the steps of a claim that are the same on every
database, made by ``db/claiming`` for one claim (its compiled statements, the
admission of candidates under their limits, the retry of a transaction).

Each engine puts them together in its own order, with its own SQL where the databases
differ (:meth:`~django_sqlqueue.db.engines.base.Engine.claim`). They are handed over
as a value rather than imported, so the engines stay below the statements that ask
them (``db/claiming`` imports the engines, never the other way)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Any, NamedTuple, Protocol, TypeVar

from django.db.models import QuerySet

T = TypeVar("T")
#: A row an ``UPDATE … RETURNING`` of the claim returned (all of a job's columns, or its id).
Returned = tuple[Any, ...]


class CandidateSQL(NamedTuple):
    """The candidates of a claim as SQL."""

    #: ``SELECT`` of their ids in claim order, for a ``LIMIT`` to follow.
    ready: str
    ready_params: tuple[Any, ...]
    #: Their condition alone, on the jobs table (the lock by id where candidates are
    #: read before they are locked, the look for keyed jobs).
    where: str
    where_params: tuple[Any, ...]


class ClaimSteps(Protocol):
    """One claim's steps: a claim of the first :attr:`limit` ready candidates for
    :attr:`worker_id`, on the database :attr:`using`."""

    #: The jobs' model, and the database they are claimed on.
    model: type[Any]
    using: str
    worker_id: str
    limit: int
    #: No rate limit configured and no keyed job met yet by this process: the claim
    #: may take keyless candidates alone, with a statement made once for their cache key.
    plain: bool
    #: An index holds the candidates in claim order (all queues, or one, no filter).
    index_ordered: bool

    def retry(self, work: Callable[[], T], *, atomic: bool = True) -> T:
        """``work()`` in a transaction (or, not ``atomic``, as one statement), tried
        again on a transient error."""

    def sql(self) -> CandidateSQL | None:
        """The candidates as SQL; None when nothing can match (``queues=[]``)."""

    def keyless(self, among: Callable[[str], str]) -> tuple[str, tuple[Any, ...]] | None:
        """The condition on the first :attr:`limit` keyless candidates of a plain claim,
        as SQL and its parameters: ``id`` followed by ``among(ready)``, which limits the
        ``SELECT`` of their ids by one more parameter. None when the claim is not plain,
        or nothing can match."""

    def run(self, where: str, params: Iterable[Any], *, ids_only: bool = False, first: str = "") -> list[Returned]:
        """The ``UPDATE … RETURNING`` that claims the jobs matching ``where``: each row,
        or only each id. ``first``: a statement sent before it in the same query."""

    def run_admitted(
        self, wanted: int, locked: Callable[[QuerySet[Any]], QuerySet[Any]], *, ids_only: bool = False
    ) -> list[Returned]:
        """Read the first ``wanted`` candidates (``locked`` as the database locks
        them), admit those under their limits, and claim them by id."""

    def short(self, returned: list[Returned]) -> bool:
        """Whether a claim that took ``returned`` goes on to admit keyed candidates:
        it took fewer than it wanted, and limits are in play or keyed jobs wait."""

    def returned(self, returned: list[Returned], *, ids_only: bool = False) -> list[Any]:
        """The claimed jobs of what :meth:`run` returned, in claim order (call it once
        the claim committed)."""

    def turn(self) -> AbstractContextManager[bool]:
        """The claims of this host taking turns, one at a time, while the block runs."""

    def candidate_ids(self, candidates: CandidateSQL, limit: int) -> list[int]:
        """The ids of the first ``limit`` ``candidates``, read without locks."""

    def lock(self, candidates: CandidateSQL, ids: list[int]) -> tuple[list[Any], Any]:
        """The first :attr:`limit` jobs by id among ``ids`` that are still ``candidates``,
        locked (skipping those another claimer locked first), as jobs the way
        :meth:`mark` leaves them; and the database's time read with them."""

    def mark(self, jobs: list[Any], started_at: Any) -> list[Any]:
        """Those of the locked ``jobs`` admitted under their limits, claimed by id,
        started at ``started_at`` (as :meth:`lock` read it)."""
