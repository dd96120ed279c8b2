"""The worker runtime that ``runworkers`` starts: the supervisor (processes, signals,
timeouts, rescue and the maintenance lease), the worker processes and their threads,
and how a job runs and its outcome is kept.

It may import the models, ``db/`` and ``rules/``, and the root's settings, signals and
exceptions; never ``admin/``, ``management/`` (the command parses, the runner works) or
the Tasks backend (``backends/``)."""
