#!/usr/bin/env python
"""Run a Letta server for the comparison backend, entirely on this machine.

Runs under the Letta virtual environment (made by scripts/setup_letta.sh),
not the project's: Letta's pins clash with ours. It starts PostgreSQL with
pgvector from the ``pgserver`` package in ``--data``, then ``letta server``
on 127.0.0.1, waits until it answers, and keeps both alive until it gets
SIGTERM/SIGINT (or its parent's stdin closes, with --exit-on-stdin-eof).

    .venv-letta/bin/python scripts/letta_server.py --data /tmp/letta-data --port 8283
"""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path


def wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"letta server exited with {proc.returncode} before answering")
        try:
            with urllib.request.urlopen(f"{url}/v1/health/", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise SystemExit(f"letta server did not answer on {url} within {timeout_s:.0f} s")


def create_schema(uri: str) -> None:
    """The pip package ships no Alembic migrations (the Docker image runs them),
    so the tables are created from Letta's own ORM models."""
    os.environ["LETTA_PG_URI"] = uri  # Letta picks column types (pgvector) from this at import
    from sqlalchemy import create_engine

    import letta.orm  # noqa: F401  # registers every model on the metadata
    from letta.orm.base import Base

    engine = create_engine(uri.replace("postgresql://", "postgresql+psycopg2://", 1))
    Base.metadata.create_all(engine)
    with engine.begin() as c:  # what Letta's migration gives messages.sequence_id (FetchedValue in the ORM)
        c.exec_driver_sql("CREATE SEQUENCE IF NOT EXISTS message_sequence_id_seq OWNED BY messages.sequence_id")
        c.exec_driver_sql("ALTER TABLE messages ALTER COLUMN sequence_id SET DEFAULT nextval('message_sequence_id_seq')")
    engine.dispose()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="folder for PostgreSQL data and Letta's home")
    ap.add_argument("--port", type=int, default=8283)
    ap.add_argument("--timeout", type=float, default=240)
    ap.add_argument("--exit-on-stdin-eof", action="store_true")
    a = ap.parse_args()
    import pgserver

    data = Path(a.data).resolve()
    (data / "home").mkdir(parents=True, exist_ok=True)
    pg = pgserver.get_server(data / "pg", cleanup_mode="stop")
    pg.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    # pgserver answers on a unix socket: postgresql://postgres:@/postgres?host=/dir.
    # Letta 0.16.8 rebuilds URIs from their parts and drops a user without a
    # host, so the URI names localhost and keeps the socket in ?host=.
    uri = pg.get_uri().replace("postgres:@/", "postgres@localhost/", 1)
    create_schema(uri)
    env = {**os.environ, "LETTA_PG_URI": uri, "HOME": str(data / "home"), "LETTA_DIR": str(data / "home" / ".letta"),
           "LETTA_TELEMETRY_ENABLED": "false", "LETTA_OTEL_EXPORTER_OTLP_ENDPOINT": "", "NO_PROXY": "*"}
    letta = Path(sys.executable).parent / "letta"
    proc = subprocess.Popen([str(letta), "server", "--host", "127.0.0.1", "--port", str(a.port)], env=env, cwd=str(data),  # it writes openapi_letta.json into its cwd
                            stdout=open(data / "letta-server.log", "ab"), stderr=subprocess.STDOUT)
    stop = threading.Event()

    def shutdown(*_):
        stop.set()

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    if a.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.read(), stop.set()), daemon=True).start()
    try:
        wait_healthy(f"http://127.0.0.1:{a.port}", proc, a.timeout)
        print(f"READY http://127.0.0.1:{a.port}", flush=True)
        while not stop.is_set() and proc.poll() is None:
            stop.wait(0.5)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
        pg.cleanup()


if __name__ == "__main__":
    main()
