"""Settings of the demo project (``manage.py demo``); ``tests.settings`` adds the
tests' own apps to them.

``DB_BACKEND`` picks the database (``sqlite``, the default; ``postgres``; ``mysql``);
``DB_NAME``, ``DB_HOST``, ``DB_PORT``, ``DB_USER`` and ``DB_PASSWORD`` override the
defaults, which match a local PostgreSQL (user postgres) and MariaDB (user root)."""

from __future__ import annotations

import os
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import django

BASE_DIR = Path(__file__).resolve().parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "django-sqlqueue-testproject-not-secret")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rangefilter",
    "django_sqlqueue",
    "testproject.demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "testproject.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# Django's Tasks framework: built in from Django 6.0, the django-tasks backport on 5.2.
if django.VERSION < (6, 0) and find_spec("django_tasks"):
    INSTALLED_APPS += ["django_tasks"]
TASKS: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django_sqlqueue.backends.SQLQueueBackend", "QUEUES": ["default", "reports"]}
}

DB_BACKEND = os.environ.get("DB_BACKEND", "sqlite")


def _database(backend: str) -> dict[str, Any]:
    env = os.environ.get
    if backend == "sqlite":
        name = env("DB_NAME", str(BASE_DIR / "db.sqlite3"))
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": {
                # BEGIN IMMEDIATE: a claim holds the write lock before it reads (sqlqueue.E010).
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            },
            # A file, not memory: the tests' worker processes must share it.
            "TEST": {"NAME": env("DB_TEST_NAME", str(BASE_DIR / "test_db.sqlite3"))},
        }
    if backend == "postgres":
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": env("DB_NAME", "sqlqueue"),
            "HOST": env("DB_HOST", "127.0.0.1"),
            "PORT": env("DB_PORT", "5432"),
            "USER": env("DB_USER", "postgres"),
            "PASSWORD": env("DB_PASSWORD", ""),
        }
    if backend == "mysql":
        return {
            "ENGINE": "django.db.backends.mysql",
            "NAME": env("DB_NAME", "sqlqueue"),
            "HOST": env("DB_HOST", "127.0.0.1"),
            "PORT": env("DB_PORT", "3306"),
            "USER": env("DB_USER", "root"),
            "PASSWORD": env("DB_PASSWORD", ""),
            "OPTIONS": {"charset": "utf8mb4"},
            "TEST": {"CHARSET": "utf8mb4", "COLLATION": "utf8mb4_unicode_ci"},
        }
    raise ValueError(f"DB_BACKEND must be sqlite, postgres or mysql, not {backend!r}")


DATABASES = {"default": {**_database(DB_BACKEND), "CONN_MAX_AGE": 600}}

AUTH_PASSWORD_VALIDATORS: list[dict[str, str]] = []
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"django_sqlqueue": {"handlers": ["console"], "level": os.environ.get("SQLQUEUE_LOG_LEVEL", "INFO")}},
}
