"""The ``manage.py`` commands (``commands/``) and what only they share: the base of a
command on the queue's tables (``base``) and the argparse types of their options
(``arguments``).

It may import everything below the public face (``runner/``, ``bench/``, ``metrics/``,
the models, ``db/``, ``rules/``); nothing but a command imports it."""
