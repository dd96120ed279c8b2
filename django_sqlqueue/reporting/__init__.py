"""What the queue reports about itself: the counts by queue and status (``counting``),
the figures the overview, ``sqlqueue_stats`` and the Prometheus gauges show (``stats``)
and whether it is working (``health``).

These modules read and summarise; they write nothing. Their statements and every
database-specific branch they need live in ``django_sqlqueue.db``; they may import ``db``, the
models and managers, ``rules`` and ``conf``, never ``runner``, ``admin`` or a command."""
