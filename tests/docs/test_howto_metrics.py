"""The metrics guide names the outcomes the workers label their metrics with, as the job's
state machine spells them (``rules/lifecycle.OUTCOMES``), so a renamed outcome fails here
before an operator's alert silently stops matching."""

from __future__ import annotations

import re
from pathlib import Path

from django_sqlqueue.rules.lifecycle import EXPIRE, OUTCOMES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "metrics.md"


def test_the_guide_lists_every_outcome_of_the_finished_jobs_metric() -> None:
    (row,) = [line for line in PAGE.read_text().splitlines() if line.startswith("| `sqlqueue_jobs_finished_total`")]
    described = row.rsplit("|", 2)[-2]
    # Every outcome of an attempt: an expired job ends before any (its signal says so).
    assert set(re.findall(r"`(\w+)`", described)) == set(OUTCOMES) - {EXPIRE.outcome}
