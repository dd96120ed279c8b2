"""A tasks module that imports in the supervisor but raises in every worker process
(it needs something only the supervisor's environment has): the processes die during
start-up, however often they are started."""

from __future__ import annotations

import multiprocessing

if multiprocessing.parent_process() is not None:
    raise RuntimeError("cannot start in a worker process")
