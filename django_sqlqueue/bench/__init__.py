"""``manage.py sqlqueue_bench``: the queue's throughput beside what the database itself can do."""
