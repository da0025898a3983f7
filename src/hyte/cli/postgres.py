"""``hyte postgres start | stop --dir DIR``: a throwaway local PostgreSQL + pgvector to try the pgvector backend
(``hyte.retrieval.postgres_server``). Production indexes live on the PostgreSQL users already run."""

from __future__ import annotations

import argparse

from .common import number_type

__all__ = ["add_commands"]

_port_number = number_type("port", int, lambda port: 1 <= port <= 65535, "a TCP port, 1 to 65535")


def _start(args: argparse.Namespace) -> int:
    from ..retrieval.postgres_server import recorded_port, start_local_postgres

    previous = recorded_port(args.dir)
    server = start_local_postgres(args.dir, args.port)
    if previous is not None and server.port != previous:
        print(f"note: port {previous} was taken, so the server now listens on {server.port}: DSNs and open indexes "
              "naming the old port must be given the new DSN")
    print(f"PostgreSQL + pgvector running on 127.0.0.1:{server.port} (files in {server.directory}; local connections "
          f"are trusted: a throwaway server, never expose it)")
    print(f"DSN: {server.dsn}")
    print(f"stop it with: hyte postgres stop --dir {args.dir}")
    return 0


def _stop(args: argparse.Namespace) -> int:
    from ..retrieval.postgres_server import stop_local_postgres

    stop_local_postgres(args.dir)
    print(f"stopped the PostgreSQL in {args.dir} (its files stay; start it again with hyte postgres start)")
    return 0


def add_commands(sub) -> None:
    postgres = sub.add_parser("postgres", help="start or stop a throwaway local PostgreSQL + pgvector (for trying "
                                               "--backend pgvector)")
    commands = postgres.add_subparsers(dest="postgres_command", required=True)
    start = commands.add_parser("start", help="create (first time) and start a server on 127.0.0.1; prints its DSN")
    start.add_argument("--dir", required=True, help="folder for its files (run as root: one every user can enter, "
                                                    "e.g. under /tmp, since PostgreSQL then runs as nobody)")
    start.add_argument("--port", type=_port_number, default=None, help="default: a free port")
    start.set_defaults(func=_start)
    stop = commands.add_parser("stop", help="stop the server started in --dir")
    stop.add_argument("--dir", required=True)
    stop.set_defaults(func=_stop)
