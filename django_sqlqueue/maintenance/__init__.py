"""The services the holder of the maintenance lease runs, one per concern, each at its
own pace: giving back the jobs of dead workers (``rescue``), enqueueing due recurring
jobs (``schedules``), counting the closed hours for the admin's chart (``rollups``)
and deleting finished jobs past their retention (``pruning``).

The supervisor (``runner.supervisor``) holds the lease and ticks them; only the leader
runs them. Their statements live in ``django_sqlqueue.db``; these modules decide when
and how much. They may import ``db``, the models and managers, ``rules`` and ``conf``,
never ``runner``, ``admin`` or a command."""
