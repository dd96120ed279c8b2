"""The harness's profile B (bounded, fenced ownership) against our claim and the writes
of the worker that holds a job: the token is the worker's name, which every claim
makes new, and every owner write (success, failure, give-back) is fenced on it. The
lease is the worker's, renewed by its heartbeat for all its jobs at once, not a job's:
the two renewal proofs, which take a per-job lease, are not run."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import Any
from uuid import UUID

import pytest

pytest.importorskip("due_work_harness", reason="due-work-harness needs Python 3.11 or later")

from django.db.models import F
from due_work_harness.profiles import bounded_ownership as profile
from due_work_harness.profiles.bounded_ownership import FencedOwnership

from django_sqlqueue.maintenance.rescue import Rescued, rescue_expired
from django_sqlqueue.models import Job
from django_sqlqueue.rules.failures import decide
from tests.conformance.bindings import notify

pytestmark = pytest.mark.django_db(transaction=True)

QUEUE = "ownership"
#: The proofs that fit a lease held per job; the renewal ones need a per-job renewal.
PROOFS = (
    profile.assert_ownership_transitions_are_production_bound,
    profile.assert_claim_is_exclusive,
    profile.assert_claim_is_exclusive_across_connections,
    profile.assert_fence_rotates_through_recovery,
    profile.assert_current_token_write_is_accepted,
    profile.assert_stale_token_is_rejected,
    profile.assert_live_lease_blocks_reclaim,
    profile.assert_expired_lease_permits_reclaim,
    profile.assert_release_returns_the_row_unspent,
)


def ownership() -> FencedOwnership:
    claimed: dict[UUID, Job] = {}

    def make_claimable() -> int:
        return Job.objects.enqueue(notify, (uuid.uuid4().hex,), queue=QUEUE).pk

    def claim() -> tuple[int, UUID] | None:
        token = uuid.uuid4()
        batch = Job.objects.claim(worker_id=str(token), queues=[QUEUE], limit=1)
        if not batch:
            return None
        claimed[token] = batch[0]
        return batch[0].pk, token

    def succeed(row: int, token: UUID) -> bool:
        return bool(Job.objects.finish_as_decided(worker_id=str(token), succeeded={claimed[token]: None}, failed={}))

    def fail(row: int, token: UUID) -> bool:
        job = claimed[token]
        failure = decide(job, ValueError("the task raised"), str(token))
        return bool(Job.objects.finish_as_decided(worker_id=str(token), succeeded={}, failed={job: failure}))

    def release(row: int, token: UUID) -> bool:
        return bool(Job.objects.release(worker_id=str(token), unstarted=[claimed[token]]))

    def expire_lease(row: int) -> None:
        """FAULT INJECTION: its claimer is gone (it never had a worker row) since long before the lease."""
        Job.objects.filter(pk=row).update(started_at=F("started_at") - datetime.timedelta(days=1))

    def reclaim_stalled(row: int) -> Rescued | None:
        rescued = rescue_expired()
        return rescued if rescued.count else None

    def renew_lease(row: int, token: UUID) -> bool:
        raise NotImplementedError("the lease is the worker's, renewed by its heartbeat, not a job's")

    def observe(row: int) -> tuple[str, str | None]:
        job = Job.objects.get(pk=row)
        return str(job.status), job.worker

    return FencedOwnership(
        name="django-sqlqueue claim and finish",
        make_claimable=make_claimable,
        claim=claim,
        fenced_write=succeed,
        other_fenced_writes={"fail": fail, "release": release},
        renew_lease=renew_lease,
        expire_lease=expire_lease,
        reclaim_stalled=reclaim_stalled,
        release_unchanged=release,
        observe=observe,
    )


@pytest.mark.parametrize("proof", PROOFS, ids=[proof.__name__.removeprefix("assert_") for proof in PROOFS])
def test_ownership(proof: Callable[[FencedOwnership], Any]) -> None:
    proof(ownership())
