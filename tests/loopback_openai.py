"""A real OpenAI-compatible HTTP server on 127.0.0.1 for tests of the remote
paths: chat answers come from a script, embeddings from the hashing embedder
(so vectors differ by text, like a real model's)."""
from __future__ import annotations

import json
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Iterator

from naia_memory.embedders import HashingEmbedder
from naia_memory.embedders.serve import send_json


@contextmanager
def openai_server(chat: Callable[[list[dict]], str] | None = None, dim: int = 64, fail_with: int | None = None) -> Iterator[str]:
    emb = HashingEmbedder(dim=dim)
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        disable_nagle_algorithm = True

        def log_message(self, *args):  # keep test output clean
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
            if fail_with:
                self._send(fail_with, {"error": {"message": "scripted failure"}})
            elif self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                vecs = emb.embed_passages(texts)
                self._send(200, {"data": [{"index": i, "embedding": v.tolist()} for i, v in enumerate(vecs)], "model": body["model"]})
            elif self.path.endswith("/chat/completions"):
                self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": chat(body["messages"])}}]})
            else:
                self._send(404, {"error": "no route"})

        def _send(self, code: int, doc: dict) -> None:
            send_json(self, code, doc)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    th = threading.Thread(target=srv.serve_forever, daemon=True)
    th.start()
    try:
        url = f"http://127.0.0.1:{srv.server_address[1]}/v1"
        openai_server.seen = seen  # type: ignore[attr-defined]
        yield url
    finally:
        srv.shutdown()
        srv.server_close()
