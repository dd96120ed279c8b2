"""What the tests use and are not tests: helpers, the processes they start
(``python -m tests.support.claimer``, ``tests.support.tasks_client``), alternate settings,
and ``poison``, a module a job row names and nothing may import."""
