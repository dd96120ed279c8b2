"""The same project on PostgreSQL: DJANGO_SETTINGS_MODULE=mysite.postgres."""

from mysite.settings import *  # noqa: F403

DATABASES = {
    "default": {
        # pip install "django-sqlqueue[postgres]"
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "mysite",
        "USER": "postgres",
        "HOST": "127.0.0.1",
        "PORT": 5432,
    }
}
