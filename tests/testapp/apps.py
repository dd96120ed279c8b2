from __future__ import annotations

from django.apps import AppConfig


class TestAppConfig(AppConfig):
    """The tests' own app: the ``@job`` tasks they enqueue and the model those tasks write.

    Installed by ``tests.settings`` only, so that the worker processes the tests start
    find its ``tasks`` module the way a project's workers find theirs."""

    name = "tests.testapp"
    label = "testapp"

    def ready(self) -> None:
        import os

        from django.db.backends.signals import connection_created

        from tests.testapp import connections

        connection_created.connect(connections.count)
        # The cross-feature property test's hostile worker processes.
        if os.environ.get("SQLQUEUE_TEST_RAISING_RECEIVERS"):
            from tests.support import middleware

            middleware.connect_request_scoped_receivers()
