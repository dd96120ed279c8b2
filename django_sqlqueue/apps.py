from __future__ import annotations

from django.apps import AppConfig


class SQLQueueConfig(AppConfig):
    """The app: registers system checks, and the start of embedded workers
    (``SQLQUEUE_EMBEDDED``), once Django is ready; nothing at import."""

    name = "django_sqlqueue"
    verbose_name = "SQL queue"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Not at the top: the checks import models, which are not loaded yet when Django imports this.
        from django_sqlqueue import checks
        from django_sqlqueue.runner import embedded

        checks.register()
        embedded.install()
