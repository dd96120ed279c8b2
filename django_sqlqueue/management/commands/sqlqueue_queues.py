"""``manage.py sqlqueue_queues list|pause|resume NAME``: pause a queue (workers stop
claiming from it within a second; running jobs finish, enqueueing goes on), resume it,
or list the paused queues."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from django_sqlqueue.db import pausing
from django_sqlqueue.management.arguments import queue_name


class Command(BaseCommand):
    help = "List the paused queues, pause a queue, or resume one."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True, metavar="list|pause|resume")
        actions.add_parser("list", help="The paused queues, with when and why.")
        pause = actions.add_parser("pause", help="Stop workers claiming from a queue.")
        pause.add_argument("name", type=queue_name, metavar="NAME")
        pause.add_argument("--reason", default="", help="Why, for whoever looks later (at most 255 characters).")
        resume = actions.add_parser("resume", help="Let workers claim from a paused queue again.")
        resume.add_argument("name", type=queue_name, metavar="NAME")

    def handle(self, *, action: str, name: str = "", reason: str = "", **options: Any) -> None:
        try:
            if action == "pause":
                done = pausing.pause_queue(name, reason)
                self.stdout.write(f"Paused queue {name!r}." if done else f"Queue {name!r} was already paused.")
                return
            if action == "resume":
                done = pausing.resume_queue(name)
                self.stdout.write(f"Resumed queue {name!r}." if done else f"Queue {name!r} was not paused.")
                return
        except ValueError as error:  # a queue SQLQUEUE_QUEUES does not allow
            raise CommandError(str(error)) from None
        else:
            paused = pausing.paused_queues()
            if not paused:
                self.stdout.write("No queue is paused.")
            for queue in paused.values():
                why = f": {queue.reason}" if queue.reason else ""
                self.stdout.write(f"{queue.queue}  paused at {queue.paused_at:%Y-%m-%d %H:%M:%S %Z}{why}")
