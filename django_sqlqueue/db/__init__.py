"""Every SQL statement the queue runs, and every ``connection.vendor`` branch: claiming,
finishing, inserting (and, in ``building``, making and checking the new jobs it
writes), pausing, the rate and concurrency limits, recurring jobs' rows, pruning, what
each database needs and which of its errors mean what.

Its modules may import the models, each other and ``rules/``; never the runtimes
(``runner/``, ``admin/``, ``management/``, ``metrics/``, ``bench/``) or the public face."""
