"""The jobs' ``insert_token``: on MySQL/MariaDB, an ``INSERT`` that cannot otherwise tell
which of its rows it wrote (a keyed insert, whose ``RETURNING`` also gives the row that
already held the key; MySQL 8's many tagged or dependent jobs) writes one token per
insert here and reads its rows back by it, rather than marking them in ``worker``.

A nullable column with no default, and nothing backfilled: PostgreSQL and SQLite add it
without rewriting the table. MariaDB cannot add a column to this table instantly or
online, because it has indexed virtual columns (the unique keys' among them): it rebuilds
the table, reads going on while writes wait."""

from __future__ import annotations

from django.db import migrations

import django_sqlqueue.db.schema.names


class Migration(migrations.Migration):
    dependencies = [
        ("django_sqlqueue", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="insert_token",
            field=django_sqlqueue.db.schema.names.NameField(
                blank=True,
                editable=False,
                help_text=(
                    "On MySQL/MariaDB, the token of the INSERT that wrote it, where that INSERT told its rows by it."
                ),
                max_length=32,
                null=True,
            ),
        ),
    ]
