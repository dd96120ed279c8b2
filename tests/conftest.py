from __future__ import annotations

import os


def pytest_report_header() -> str:
    return f"database: DB_BACKEND={os.environ.get('DB_BACKEND', 'sqlite')}"
