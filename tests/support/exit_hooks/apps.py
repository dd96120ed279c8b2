from __future__ import annotations

from django.apps import AppConfig

from tests.support.exit_hooks import say_pid_at_exit


class ExitHooksConfig(AppConfig):
    name = "tests.support.exit_hooks"

    def ready(self) -> None:
        say_pid_at_exit()
