"""Machines made of Linux network namespaces: one for the database servers and one per
worker host, joined by a bridge that lives in the database's namespace.

Nothing here touches the machine's own network: every namespace, link and address is
created inside namespaces this module made (named ``sqq<pid>-…``), and ``close()``
deletes the namespaces, which takes their links with them. Needs root, ``ip`` and ``tc``."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from pathlib import Path

#: The private subnet inside the suite's namespaces: the servers on .1, host n on .10+n.
SUBNET = "10.77.0"
DATABASE_ADDRESS = f"{SUBNET}.1"
PREFIX = "sqq"


def program(name: str) -> str:
    """The path of a system program, looked for in the sbin folders too (a plain
    ``PATH``, as CI's, lacks them)."""
    found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    if found is None:
        raise RuntimeError(f"{name} is not installed: the multi-host suite needs it (Debian's packages).")
    return found


def run(*command: str) -> None:
    """Run a command, raising with its stderr when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    if result.returncode:
        raise RuntimeError(f"{' '.join(command)}: {result.stderr.strip()}")


class Network:
    """A database namespace and ``hosts`` host namespaces on one bridge."""

    def __init__(self, hosts: int) -> None:
        remove_stale()
        self.tag = f"{PREFIX}{os.getpid()}"
        self.database = f"{self.tag}-db"
        self.hosts = [f"{self.tag}-h{n}" for n in range(1, hosts + 1)]
        self.made: list[str] = []
        try:
            self._make()
        except BaseException:
            self.close()
            raise

    def _make(self) -> None:
        self._namespace(self.database)
        run("ip", "-n", self.database, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", self.database, "addr", "add", f"{DATABASE_ADDRESS}/24", "dev", "br0")
        run("ip", "-n", self.database, "link", "set", "br0", "up")
        for number, host in enumerate(self.hosts, start=1):
            self._namespace(host)
            # Made inside the host's namespace, its peer at once in the database's: no
            # end of the link ever exists in the machine's own namespace.
            run(
                "ip",
                "-n",
                host,
                "link",
                "add",
                "eth0",
                "type",
                "veth",
                "peer",
                "name",
                f"v{number}",
                "netns",
                self.database,
            )
            run("ip", "-n", host, "addr", "add", f"{SUBNET}.{10 + number}/24", "dev", "eth0")
            run("ip", "-n", host, "link", "set", "eth0", "up")
            run("ip", "-n", self.database, "link", "set", f"v{number}", "master", "br0")
            run("ip", "-n", self.database, "link", "set", f"v{number}", "up")

    def _namespace(self, name: str) -> None:
        run("ip", "netns", "add", name)
        self.made.append(name)
        run("ip", "-n", name, "link", "set", "lo", "up")

    def in_namespace(self, name: str) -> list[str]:
        """The command prefix that runs a program inside namespace ``name``."""
        return ["ip", "netns", "exec", name]

    def address(self, host: str) -> str:
        return f"{SUBNET}.{10 + self.hosts.index(host) + 1}"

    def cut(self, host: str) -> None:
        """Cut ``host`` off the network: its link goes down, its connections hang."""
        run("ip", "-n", host, "link", "set", "eth0", "down")

    def mend(self, host: str) -> None:
        run("ip", "-n", host, "link", "set", "eth0", "up")

    def close(self) -> None:
        """Delete every namespace made, and with them their links."""
        for name in reversed(self.made):
            with contextlib.suppress(RuntimeError):
                run("ip", "netns", "del", name)
        self.made.clear()


def remove_stale() -> None:
    """Delete the namespaces of earlier runs whose process is gone (killed before it
    could tear down); never another live run's."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True).stdout
    for line in listing.splitlines():
        name = line.split()[0] if line.strip() else ""
        owner = name[len(PREFIX) :].split("-")[0]
        if name.startswith(PREFIX) and owner.isdigit() and not Path(f"/proc/{owner}").exists():
            with contextlib.suppress(RuntimeError):
                run("ip", "netns", "del", name)
