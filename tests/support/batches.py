"""A batch's three callbacks, each recording its run under its own token ("ok", "ko",
"end"): what the tests of batches run by worker processes count."""

from __future__ import annotations

from typing import Any

from tests.testapp.tasks import batch_done


def recording_callbacks() -> dict[str, Any]:
    """``Job.objects.batch()``'s callbacks, as keyword arguments."""
    return {
        "on_success": (batch_done, ("ok",)),
        "on_failure": (batch_done, ("ko",)),
        "on_finish": (batch_done, ("end",)),
    }
