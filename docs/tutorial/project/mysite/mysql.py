"""The same project on MariaDB or MySQL: DJANGO_SETTINGS_MODULE=mysite.mysql."""

from mysite.settings import *  # noqa: F403

DATABASES = {
    "default": {
        # pip install "django-sqlqueue[mysql]"
        "ENGINE": "django.db.backends.mysql",
        "NAME": "mysite",  # CREATE DATABASE mysite CHARACTER SET utf8mb4
        "USER": "root",
        "HOST": "127.0.0.1",
        "PORT": 3306,
    }
}
