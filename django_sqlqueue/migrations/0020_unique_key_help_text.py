"""The unique key's help text points at the documentation, not at a README section that
moved there. Only the text changes: no statement runs on any database."""

from __future__ import annotations

from django.db import migrations

import django_sqlqueue.db.names


class Migration(migrations.Migration):
    dependencies = [("django_sqlqueue", "0019_binary_names")]

    operations = [
        migrations.AlterField(
            model_name="job",
            name="unique_key",
            field=django_sqlqueue.db.names.NameField(
                blank=True,
                help_text="No other ready or running job has this key (see the docs: Unique jobs).",
                max_length=255,
                null=True,
            ),
        ),
    ]
