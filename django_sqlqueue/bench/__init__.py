"""``manage.py sqlqueue_bench``: the queue's throughput beside what the database itself
can do. It may import the runner, the models, ``db/`` and ``rules/``; never
``management/`` (its command imports it)."""
