"""The tests' app: see ``apps.py``."""
