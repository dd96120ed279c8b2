"""The peers' same-hour comparison: django-sqlqueue beside the other job queues on
PostgreSQL, each run as its own docs say, timed the same way.

For each peer and each round: a fresh scratch database (``peers_<peer>``), the peer's
schema installed, N jobs enqueued one per call (the enqueue rate), then W worker
processes started with the peer's own worker command and the clock read twice: (a) when
all N jobs are recorded done in the peer's own table (polled every 10 ms), and (b) when
every worker process has exited. A peer whose worker has no mode that exits once the
queue is empty is sent SIGTERM at (a), so (b) includes its graceful shutdown. The peers
take turns within each round (A B C … A B C …) and the medians are printed with the load
average before and after each run. See README.md beside this file.

Run it with a Python that has psycopg (the project's dev environment); the peers live in
virtualenvs of their own that ``install`` makes, never in the project's.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
POLL = float(os.environ.get("PEERS_POLL", "0.01"))


@dataclass(frozen=True)
class Peer:
    """How to install, enqueue into and run one peer, and how to see its work done."""

    name: str
    requirement: tuple[str, ...]  # what ``install`` puts in the peer's venv (none: ours, from the repo)
    module: str  # its module under apps/, run by apps/run.py
    workers: Callable[[Path, int, str], list[list[str]]]  # (venv bin, W, dsn) -> commands
    done: str  # the run's jobs done successfully; the drain's clock (a) stops when all are
    exits_when_empty: bool
    env: dict[str, str] = field(default_factory=dict)
    no_drain: str = ""  # why the drain is not run, if it is not


def _each(w: int, command: list[str]) -> list[list[str]]:
    return [command] * w


def _django(bin_: Path, *args: str) -> list[str]:
    return [str(bin_ / "python"), "-m", "django", *args]


PEERS = [
    Peer(
        "django-sqlqueue",
        (),
        "django_peer",
        lambda b, w, d: [_django(b, "runworkers", "--burst", "--processes", str(w), "-v", "0")],
        "SELECT count(*) FROM django_sqlqueue_job WHERE status = 'SUCCESSFUL'",
        exits_when_empty=True,
        env={"PEERS_APP": "django_sqlqueue"},
    ),
    Peer(
        "django-tasks-db",
        ("django-tasks-db==0.13.0",),
        "django_peer",
        lambda b, w, d: _each(w, _django(b, "db_worker", "--batch")),
        "SELECT count(*) FROM django_tasks_database_dbtaskresult WHERE status = 'SUCCESSFUL'",
        exits_when_empty=True,
        env={"PEERS_APP": "django_tasks_db"},
    ),
    Peer(
        "procrastinate",
        ("procrastinate==3.10.0",),
        "procrastinate_peer",
        lambda b, w, d: _each(
            w, [str(b / "procrastinate"), "--app=apps.procrastinate_peer.app", "worker", "--one-shot"]
        ),
        "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'",
        exits_when_empty=True,
    ),
    Peer(
        "pgqueuer",
        ("pgqueuer==1.6.0", "asyncpg", "typer<0.20"),  # 1.6.0's `pgq run` fails on typer 0.20+
        "pgqueuer_peer",
        lambda b, w, d: _each(w, [str(b / "pgq"), "run", "apps.pgqueuer_peer:create_pgqueuer", "--mode", "drain"]),
        "SELECT count(*) FROM pgqueuer_log WHERE status = 'successful'",
        exits_when_empty=True,
    ),
    Peer(
        "oban",
        ("oban==0.7.0",),
        "oban_peer",
        lambda b, w, d: _each(
            w, [str(b / "oban"), "start", "--dsn", d, "--queues", "default:10", "--log-level", "warning"]
        ),
        "SELECT count(*) FROM oban_jobs WHERE state = 'completed'",
        exits_when_empty=False,
    ),
    Peer(
        "chancy",
        ("chancy[cli]==0.26.0",),
        "chancy_peer",
        lambda b, w, d: _each(w, [str(b / "chancy"), "--app", "apps.chancy_peer.chancy", "worker", "start"]),
        "SELECT count(*) FROM chancy_jobs WHERE state = 'succeeded'",
        exits_when_empty=False,
        no_drain="with its defaults a worker fetches as many jobs as its queue has free slots (the CPU count), "
        "then waits the queue's polling interval (5 s) unless a new job is pushed: 48 of 300 jobs in 60 s",
    ),
    Peer(
        "django-q2",
        ("django-q2==1.11.1",),
        "django_peer",
        # One cluster of W workers: django-q2 runs its own worker processes.
        lambda b, w, d: [_django(b, "qcluster")],
        # Its results keep the latest 250 successes (save_limit); a job leaves its ORM
        # broker's table once its result is saved.
        "SELECT %(jobs)s - count(*) FROM django_q_ormq",
        exits_when_empty=False,
        env={"PEERS_APP": "django_q"},
    ),
]


def venv_bin(peer: Peer, venvs: Path) -> Path:
    """Ours runs on the Python running this script, the repo's tree on its path."""
    return Path(sys.executable).parent if not peer.requirement else venvs / peer.name / "bin"


def peer_env(peer: Peer, database: str, workers: int) -> dict[str, str]:
    path = [str(HERE)] + ([str(REPO)] if not peer.requirement else [])
    return {
        **os.environ,
        **peer.env,
        "PEERS_DB": database,
        "PEERS_WORKERS": str(workers),
        "PYTHONPATH": os.pathsep.join(path),
        "DJANGO_SETTINGS_MODULE": "apps.django_settings",
    }


def dsn(database: str) -> str:
    env = os.environ.get
    server = f"{env('PEERS_USER', 'postgres')}@{env('PEERS_HOST', '127.0.0.1')}:{env('PEERS_PORT', '5432')}"
    return f"postgresql://{server}/{database}"


def install(peers: list[Peer], venvs: Path, python: str) -> None:
    for peer in peers:
        if not peer.requirement:
            continue
        target = venvs / peer.name
        subprocess.run([python, "-m", "venv", str(target)], check=True)
        subprocess.run([str(target / "bin" / "pip"), "install", "-q", *peer.requirement, "psycopg[binary]"], check=True)
        print(f"{peer.name}: {' '.join(peer.requirement)} in {target}")


def recreate(database: str) -> None:
    import psycopg

    with psycopg.connect(dsn("postgres"), autocommit=True) as connection:
        connection.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
        connection.execute(f'CREATE DATABASE "{database}"')


def count(connection: object, sql: str, jobs: int) -> int:
    return connection.execute(sql, {"jobs": jobs}).fetchone()[0]  # type: ignore[attr-defined]


def run_once(peer: Peer, jobs: int, workers: int, venvs: Path, timeout: float, logs: Path) -> dict[str, object]:
    """One run of one peer: its enqueue rate, and its drain timed at (a) and at (b)."""
    import psycopg

    database = "peers_" + peer.name.replace("-", "_")
    recreate(database)
    bin_, env = venv_bin(peer, venvs), peer_env(peer, database, workers)
    runner = [str(bin_ / "python"), "-m", "apps.run", peer.module]
    log = open(logs / f"{database}.log", "ab")  # noqa: SIM115  closed below, after the workers
    subprocess.run([*runner, "setup"], cwd=HERE, env=env, check=True, stdout=log, stderr=log)
    output = subprocess.run(
        [*runner, "enqueue", str(jobs)], cwd=HERE, env=env, check=True, capture_output=True, text=True
    )
    enqueue_seconds = float(output.stdout.split("ENQUEUE_SECONDS")[-1])
    load_before = os.getloadavg()[0]
    if peer.no_drain:
        log.close()
        return _run(peer, jobs, workers, enqueue_seconds, None, None, load_before, f"drain not run: {peer.no_drain}")
    with psycopg.connect(dsn(database), autocommit=True) as connection:
        began = time.perf_counter()
        processes = [
            subprocess.Popen(command, cwd=HERE, env=env, stdout=log, stderr=log, start_new_session=True)
            for command in peer.workers(bin_, workers, dsn(database))
        ]
        emptied = exited = None
        while time.perf_counter() - began < timeout:
            if emptied is None and count(connection, peer.done, jobs) == jobs:
                emptied = time.perf_counter() - began
                if not peer.exits_when_empty:
                    for process in processes:
                        process.send_signal(signal.SIGTERM)
            if all(process.poll() is not None for process in processes):
                exited = time.perf_counter() - began
                break
            time.sleep(POLL)
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        log.close()
        done = count(connection, peer.done, jobs)
    problem = "" if emptied and exited and done == jobs else f"{done} of {jobs} done, timeout or crash: see {log.name}"
    return _run(peer, jobs, workers, enqueue_seconds, emptied, exited, load_before, problem)


def _run(
    peer: Peer,
    jobs: int,
    workers: int,
    enqueue_seconds: float,
    emptied: float | None,
    exited: float | None,
    load_before: float,
    problem: str,
) -> dict[str, object]:
    return {
        "peer": peer.name,
        "jobs": jobs,
        "workers": workers,
        "enqueue_per_s": jobs / enqueue_seconds,
        "emptied_s": emptied,
        "exited_s": exited,
        "drain_emptied_per_s": jobs / emptied if emptied and not problem else None,
        "drain_exited_per_s": jobs / exited if exited and not problem else None,
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "problem": problem,
    }


def _median(runs: list[dict[str, object]], key: str) -> str:
    """The median of the runs that have the figure, with their range when there are several."""
    values = [float(run[key]) for run in runs if run[key] is not None]  # type: ignore[arg-type]
    if not values:
        return "n/a"
    spread = f" ({min(values):,.0f} to {max(values):,.0f})" if len(values) > 1 else ""
    return f"{statistics.median(values):,.0f}{spread}"


def table(runs: list[dict[str, object]], peers: list[Peer], sizes: list[int], workers: int) -> str:
    header = ["peer", "enqueue, jobs/s"]
    for size in sizes:
        header += [f"{size:,} jobs: (a) emptied, jobs/s", f"{size:,} jobs: (b) exited, jobs/s"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for peer in peers:
        mine = [run for run in runs if run["peer"] == peer.name]
        row = [peer.name, _median(mine, "enqueue_per_s")]
        for size in sizes:
            sized = [run for run in mine if run["jobs"] == size]
            row += [_median(sized, "drain_emptied_per_s"), _median(sized, "drain_exited_per_s")]
        problems = {str(run["problem"]) for run in mine if run["problem"]}
        lines.append("| " + " | ".join(row) + " |" + (f" {'; '.join(sorted(problems))}" if problems else ""))
    loads = [float(run[key]) for run in runs for key in ("load_before", "load_after")]  # type: ignore[arg-type]
    rounds = len(runs) // max(len(peers) * len(sizes), 1)
    lines.append(f"\nW = {workers}; medians of {rounds} rounds; load average {min(loads):.2f} to {max(loads):.2f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "action", choices=["install", "run", "dry-run"], help="make the venvs; measure; print the commands only"
    )
    parser.add_argument(
        "--peers", nargs="+", choices=[peer.name for peer in PEERS], default=[peer.name for peer in PEERS]
    )
    parser.add_argument("--jobs", nargs="+", type=int, default=[3000], help="jobs a run (default: 3000)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes, W (default: 2)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; each runs every peer once (default: 3)")
    parser.add_argument("--venvs", type=Path, default=Path("/tmp/peers-venvs"), help="where the peers' virtualenvs are")
    parser.add_argument("--python", default=sys.executable, help="the Python that `install` makes the venvs with")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a drain is given up")
    parser.add_argument("--json", type=Path, help="also write every run to this file")
    options = parser.parse_args()
    peers = [peer for peer in PEERS if peer.name in options.peers]
    if options.action == "install":
        install(peers, options.venvs, options.python)
        return
    if options.action == "dry-run":
        for peer in peers:
            bin_ = venv_bin(peer, options.venvs)
            print(f"{peer.name}: {bin_ / 'python'} -m apps.run {peer.module} setup|enqueue N")
            for command in peer.workers(bin_, options.workers, dsn("peers_" + peer.name.replace("-", "_"))):
                print("    " + " ".join(command) + ("" if peer.exits_when_empty else "   (SIGTERM once emptied)"))
        return
    logs = Path(os.environ.get("TMPDIR", "/tmp"))
    runs = []
    for round_ in range(options.rounds):
        for size in options.jobs:
            for peer in peers:
                run = run_once(peer, size, options.workers, options.venvs, options.timeout, logs)
                runs.append(run)
                print(f"round {round_ + 1} {json.dumps(run)}", flush=True)
    if options.json:
        options.json.write_text(json.dumps(runs, indent=1))
    print(table(runs, peers, options.jobs, options.workers))


if __name__ == "__main__":
    main()
