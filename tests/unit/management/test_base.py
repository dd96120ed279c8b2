"""Every command on the queue's tables refuses, in one line, to work on tables that are
not current (a database that is down: ``tests/integration/management/test_base.py``)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.migrations.recorder import MigrationRecorder

pytestmark = pytest.mark.django_db

COMMANDS = ["runworkers", "sqlqueue_bench", "sqlqueue_health", "sqlqueue_prune", "sqlqueue_stats"]


@pytest.mark.parametrize("command", COMMANDS)
def test_unapplied_migrations_stop_the_command(command: str) -> None:
    latest = MigrationRecorder.Migration.objects.filter(app="django_sqlqueue").latest("name")
    latest.delete()
    with pytest.raises(CommandError) as excinfo:
        call_command(command, stdout=StringIO(), stderr=StringIO())
    assert str(excinfo.value) == f"The queue's migrations are not applied ({latest.name}): run manage.py migrate."
