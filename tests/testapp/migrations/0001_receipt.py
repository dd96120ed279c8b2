from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    operations = [
        migrations.CreateModel(
            name="Receipt",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("token", models.CharField(max_length=100, unique=True)),
                ("runs", models.PositiveIntegerField(default=1)),
            ],
        ),
    ]
