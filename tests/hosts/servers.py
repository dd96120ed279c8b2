"""The suite's own database servers, started inside the database namespace with their
data under a temporary folder: a PostgreSQL cluster and a MariaDB instance that listen on
the namespace's address, and on a Unix socket in that folder for the test process (which
stays in the machine's namespace). The machine's own servers are never touched."""

from __future__ import annotations

import contextlib
import glob
import pwd
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.hosts.network import DATABASE_ADDRESS, SUBNET, Network, program, run

STARTUP_SECONDS = 60


def _owned_by(path: Path, user: str) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    account = pwd.getpwnam(user)
    shutil.chown(path, account.pw_uid, account.pw_gid)
    return path


class Server:
    """A database server in the network's database namespace."""

    vendor: str
    port: int
    user: str
    #: What its folders and log are named after: one vendor may run more than one server.
    name: str

    def __init__(self, network: Network, root: Path) -> None:
        self.network = network
        self.root = root
        self.process: subprocess.Popen[bytes] | None = None

    def env(self, name: str, *, from_host: bool) -> dict[str, str]:
        """``tests.settings``' variables for database ``name``: over the network from a
        host namespace, over the Unix socket from the test process."""
        return {
            "DB_BACKEND": self.vendor,
            "DB_NAME": name,
            "DB_HOST": DATABASE_ADDRESS if from_host else str(self.socket_path),
            "DB_PORT": str(self.port),
            "DB_USER": self.user,
            "DB_PASSWORD": "",
        }

    def replica_env(self, name: str, *, from_host: bool) -> dict[str, str]:
        """``tests.settings``' variables that make this server the ``replica`` database
        of ``name`` and route reads there (``tests.support.routers.PrimaryReplicaRouter``)."""
        found = self.env(name, from_host=from_host)
        return {"DB_REPLICA_HOST": found["DB_HOST"], "DB_REPLICA_PORT": found["DB_PORT"]}

    @property
    def socket_path(self) -> Path:
        raise NotImplementedError

    def start(self) -> None:
        with (self.root / f"{self.name}.log").open("ab") as log:  # the server keeps its own copy
            self.process = subprocess.Popen(
                [*self.network.in_namespace(self.network.database), *self.command()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self.answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start:\n{self.log_text()}")
            time.sleep(0.2)

    def stop(self) -> None:
        """A fast, clean shutdown (SIGINT for PostgreSQL, SIGTERM for MariaDB)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(self.stop_signal)
        try:
            self.process.wait(60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def restart(self) -> None:
        self.stop()
        self.start()

    def log_text(self) -> str:
        with contextlib.suppress(OSError):
            return (self.root / f"{self.name}.log").read_text(errors="replace")[-4000:]
        return ""

    def answers(self) -> bool:
        try:
            self.execute("SELECT 1")
        except Exception:
            return False
        return True

    def command(self) -> list[str]:
        raise NotImplementedError

    stop_signal: int

    def connect(self, database: str | None = None) -> Any:
        raise NotImplementedError

    def execute(self, sql: str, database: str | None = None) -> list[tuple[Any, ...]]:
        """Run one statement as the superuser, over the socket; its rows."""
        connection = self.connect(database)
        try:
            cursor = connection.cursor()
            cursor.execute(sql)
            rows = list(cursor.fetchall()) if cursor.description else []
            connection.commit()
            return rows
        finally:
            connection.close()

    def create_database(self, name: str) -> None:
        raise NotImplementedError


AS_POSTGRES = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]


class PostgresServer(Server):
    vendor = "postgres"
    name = "postgres"
    port = 5432
    user = "postgres"
    stop_signal = 2  # SIGINT: PostgreSQL's fast shutdown

    def __init__(self, network: Network, root: Path) -> None:
        super().__init__(network, root)
        self.bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"))[-1]).parent
        self.data = _owned_by(root / f"{self.name}-data", "postgres")
        self.sockets = _owned_by(root / f"{self.name}-socket", "postgres")
        self.make_cluster()
        self.start()

    def make_cluster(self) -> None:
        """A new cluster whose users are trusted over the socket and from the hosts
        (initdb's trust covers the socket's replication connections too)."""
        run(
            *AS_POSTGRES, str(self.bin / "initdb"), "--auth=trust", "--username=postgres", "--no-sync",
            "--encoding=UTF8", "--locale=C.UTF-8", "-D", str(self.data),
        )  # fmt: skip
        with (self.data / "pg_hba.conf").open("a") as hba:
            hba.write(f"host all all {SUBNET}.0/24 trust\n")

    @property
    def socket_path(self) -> Path:
        return self.sockets

    def command(self) -> list[str]:
        return [
            *AS_POSTGRES, str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port),
            "-c", f"listen_addresses={DATABASE_ADDRESS}",
            "-c", f"unix_socket_directories={self.sockets}",
            "-c", "max_connections=300",
        ]  # fmt: skip

    def connect(self, database: str | None = None) -> Any:
        import psycopg

        return psycopg.connect(
            host=str(self.sockets), port=self.port, user="postgres", dbname=database or "postgres", connect_timeout=5
        )

    def create_database(self, name: str) -> None:
        connection = self.connect()
        connection.autocommit = True
        try:
            connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            connection.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()


class PostgresStandby(PostgresServer):
    """A streaming standby of ``primary``, in the same namespace on the next port: a base
    backup of its cluster that replays its WAL as it arrives (hot standby: it answers
    reads, refuses writes). Databases made on the primary later appear here too."""

    name = "postgres-standby"
    port = 5433

    def __init__(self, primary: PostgresServer) -> None:
        self.primary = primary
        super().__init__(primary.network, primary.root)

    def make_cluster(self) -> None:
        self.data.chmod(0o700)  # as initdb leaves it: PostgreSQL refuses more
        # -R: standby.signal and primary_conninfo, over the primary's socket; a fast
        # checkpoint, or it waits for the next one.
        run(
            *AS_POSTGRES, str(self.bin / "pg_basebackup"), "-h", str(self.primary.sockets),
            "-p", str(self.primary.port), "-U", "postgres", "-D", str(self.data),
            "-R", "-X", "stream", "--checkpoint=fast", "--no-sync",
        )  # fmt: skip

    def pause_replay(self) -> None:
        """Stop applying the primary's WAL: from now on the standby lags by all of it."""
        self.execute("SELECT pg_wal_replay_pause()")

    def resume_replay(self) -> None:
        self.execute("SELECT pg_wal_replay_resume()")

    def caught_up(self) -> bool:
        """Whether it has replayed everything the primary has written so far."""
        [(written,)] = self.primary.execute("SELECT pg_current_wal_lsn()::text")
        [(replayed,)] = self.execute(f"SELECT pg_last_wal_replay_lsn() >= '{written}'::pg_lsn")
        return bool(replayed)


class MariaDBServer(Server):
    vendor = "mysql"
    name = "mariadb"
    port = 3306
    user = "root"
    stop_signal = 15
    #: The server's options for replication: none for the suite's own server.
    replication: tuple[str, ...] = ()

    def __init__(self, network: Network, root: Path) -> None:
        super().__init__(network, root)
        self.data = _owned_by(root / f"{self.name}-data", "mysql")
        self.run_dir = _owned_by(root / f"{self.name}-run", "mysql")
        run(
            program("mariadb-install-db"), "--no-defaults", f"--datadir={self.data}", "--user=mysql",
            "--auth-root-authentication-method=normal", "--skip-test-db",
        )  # fmt: skip
        self.start()
        # The hosts come over the network: root from anywhere, as root@localhost is.
        self.execute("CREATE USER IF NOT EXISTS 'root'@'%'")
        self.execute("GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION")

    @property
    def socket_path(self) -> Path:
        return self.run_dir / "mariadb.sock"

    def command(self) -> list[str]:
        return [
            program("mariadbd"), "--no-defaults", f"--datadir={self.data}", "--user=mysql",
            f"--socket={self.socket_path}", f"--pid-file={self.run_dir / 'mariadb.pid'}",
            f"--bind-address={DATABASE_ADDRESS}", f"--port={self.port}", "--skip-name-resolve",
            "--max-connections=300", "--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci",
            "--transaction-isolation=READ-COMMITTED", *self.replication,
        ]  # fmt: skip

    def connect(self, database: str | None = None) -> Any:
        import MySQLdb

        return MySQLdb.connect(unix_socket=str(self.socket_path), user="root", db=database or "", connect_timeout=5)

    def create_database(self, name: str) -> None:
        self.execute(f"DROP DATABASE IF EXISTS `{name}`")
        self.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")


class MariaDBSource(MariaDBServer):
    """A MariaDB server that writes a binary log for a replica: a second server beside
    the suite's own, which keeps no log (it would slow every other figure)."""

    name = "mariadb-source"
    port = 3307
    replication = ("--log-bin", "--server-id=1", "--binlog-format=ROW")


class MariaDBReplica(MariaDBServer):
    """A replica of ``source``: a new server that applies the source's binary log from
    its start over the network, by GTID, and refuses writes but its own thread's."""

    name = "mariadb-replica"
    port = 3308
    replication = ("--server-id=2", "--read-only")

    def __init__(self, source: MariaDBSource) -> None:
        self.source = source
        super().__init__(source.network, source.root)
        self.execute(
            f"CHANGE MASTER TO MASTER_HOST='{DATABASE_ADDRESS}', MASTER_PORT={source.port},"
            " MASTER_USER='root', MASTER_USE_GTID=slave_pos"
        )
        self.execute("START SLAVE")

    def caught_up(self) -> bool:
        [(written,)] = self.source.execute("SELECT @@gtid_binlog_pos")
        [(reached,)] = self.execute(f"SELECT MASTER_GTID_WAIT('{written}', 0)")
        return bool(reached == 0)

    def pause_replay(self) -> None:
        """Stop applying the source's log (it still arrives): from now on the replica lags by all of it."""
        self.execute("STOP SLAVE SQL_THREAD")

    def resume_replay(self) -> None:
        self.execute("START SLAVE SQL_THREAD")


class PgBouncer:
    """Debian's PgBouncer in the database namespace, in front of the suite's PostgreSQL
    (over its Unix socket), in transaction pooling mode, as the postgres user (it will
    not run as root). Hosts reach it at the database address on ``port``."""

    port = 6432

    def __init__(self, network: Network, postgres: PostgresServer) -> None:
        self.network = network
        self.root = _owned_by(postgres.root / "pgbouncer", "postgres")
        (self.root / "users.txt").write_text('"postgres" ""\n')
        (self.root / "pgbouncer.ini").write_text(
            "[databases]\n"
            f"* = host={postgres.socket_path} port={postgres.port}\n"
            "[pgbouncer]\n"
            f"listen_addr = {DATABASE_ADDRESS}\n"
            f"listen_port = {self.port}\n"
            "unix_socket_dir =\n"
            "auth_type = trust\n"
            f"auth_file = {self.root / 'users.txt'}\n"
            "pool_mode = transaction\n"
            "default_pool_size = 8\n"
            "max_client_conn = 200\n"
        )
        self.log = (self.root / "pgbouncer.log").open("ab")
        as_postgres = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
        command = [program("pgbouncer"), str(self.root / "pgbouncer.ini")]
        self.process = subprocess.Popen(
            [*network.in_namespace(network.database), *as_postgres, *command],
            stdin=subprocess.DEVNULL,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while "listening on" not in self.log_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"pgbouncer did not start:\n{self.log_text()}")
            time.sleep(0.2)

    def log_text(self) -> str:
        return (self.root / "pgbouncer.log").read_text(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
