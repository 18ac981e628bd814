"""schemathesis against the REST server's own OpenAPI document (issue 11):
every operation, generated valid and invalid requests, with a token. No
response may be a 500, every response must match the status codes and
bodies the document declares, and after every case each record in the
store must still be writable."""
from __future__ import annotations

import json

import pytest

schemathesis = pytest.importorskip("schemathesis")
pytest.importorskip("fastapi")
from hypothesis import HealthCheck, settings  # noqa: E402
from schemathesis.checks import (  # noqa: E402
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from naia_memory import LocalStore, MemorySystem  # noqa: E402
from naia_memory.embedders import HashingEmbedder  # noqa: E402
from naia_memory.server.rest import ServerSettings, create_app  # noqa: E402
from naia_memory.stores.port import RecordFilter  # noqa: E402

TOKEN = "schemathesis-token-0123"
MEMORY = MemorySystem(store=LocalStore(None), embedder=HashingEmbedder(dim=32))
MEMORY.encode(content="I live in Lisbon", project="alice")
APP = create_app(MEMORY, ServerSettings(tokens={TOKEN: None}, rate=1e6, burst=1_000_000))
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", APP)
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@SCHEMA.parametrize()
@settings(max_examples=80, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large])
def test_no_server_errors_and_responses_as_documented(case):
    response = case.call(headers={"Authorization": f"Bearer {TOKEN}"})
    case.validate_response(response, checks=CHECKS)
    for r in MEMORY.store.records(RecordFilter(statuses=None)):
        json.dumps(r.to_json(), ensure_ascii=False, allow_nan=False).encode("utf-8")
