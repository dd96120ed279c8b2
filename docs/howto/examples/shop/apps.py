"""The shop app: it connects its job signal receivers when Django is ready."""

from __future__ import annotations

from django.apps import AppConfig


class ShopConfig(AppConfig):
    name = "shop"

    # [connect]
    def ready(self) -> None:
        from django_sqlqueue.signals import job_failed, job_finished
        from shop.receivers import alert_on_failure, log_slow_job

        job_finished.connect(log_slow_job, dispatch_uid="shop.log_slow_job")
        job_failed.connect(
            alert_on_failure, dispatch_uid="shop.alert_on_failure"
        )

    # [/connect]
