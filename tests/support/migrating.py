"""Migrating the app from a test: to a named migration, or to its last."""

from __future__ import annotations

from io import StringIO

from django.core.management import call_command


def migrate(target: str | None) -> None:
    """Migrate ``django_sqlqueue`` to ``target`` (its last migration when None), quietly."""
    args = ["django_sqlqueue"] if target is None else ["django_sqlqueue", target]
    call_command("migrate", *args, verbosity=0, stdout=StringIO())


def sqlmigrate(name: str) -> str:
    """What ``sqlmigrate`` prints for ``django_sqlqueue``'s migration ``name``."""
    out = StringIO()
    call_command("sqlmigrate", "django_sqlqueue", name, stdout=out)
    return out.getvalue()
