"""The published OpenAPI document: valid OpenAPI 3.1, and in step with the registered routes and
the server's own parameter rules. No server is started and no network is used."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import orjson
import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator, validate
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:  # plain `pytest` does not put the checkout on sys.path
    sys.path.insert(0, str(REPO))

from server import apidocs  # noqa: E402
from server.app import create_app  # noqa: E402
from server.config import Config  # noqa: E402
from server.geocoding import handlers as geocoding  # noqa: E402
from server.http import languages  # noqa: E402
from server.http.errors import PROBLEM_JSON, ApiError  # noqa: E402
from server.openapi import document as openapi  # noqa: E402
from server.webcams import queries  # noqa: E402

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DOC = openapi.document()


def operations() -> list[tuple[str, str, dict]]:
    return [
        (path, method, op)
        for path, item in DOC["paths"].items()
        for method, op in item.items()
        if method in METHODS
    ]


def parameter(path: str, name: str) -> dict:
    return next(p for p in DOC["paths"][path]["get"]["parameters"] if p.get("name") == name)


def assert_problem(op: dict, status: int, where: str) -> None:
    response = op["responses"].get(str(status))
    assert response is not None, f"{where} does not document {status}"
    assert response["content"][PROBLEM_JSON]["schema"] == {
        "$ref": "#/components/schemas/Problem"
    }, f"{where} {status} is not a Problem"


def test_document_is_valid_openapi_3_1():
    assert DOC["openapi"] == "3.1.0"
    validate(DOC, cls=OpenAPIV31SpecValidator)


def test_document_bytes_serialise_the_document():
    assert orjson.loads(openapi.document_bytes()) == json.loads(json.dumps(DOC))


def test_info_names_version_and_geonames_licence():
    info = DOC["info"]
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", info["version"])
    assert "https://creativecommons.org/licenses/by/4.0/" in info["description"]
    assert "GeoNames" in info["description"]


def test_every_route_is_documented_and_every_documented_operation_exists(tmp_path):
    app = create_app(
        Config(
            build_dir=tmp_path,  # secrets never in the runner's HOME
            signing_secrets_file=tmp_path / "signing-secrets.json",
        )
    )
    routed = {
        (route.method.lower(), route.resource.canonical)
        for route in app.router.routes()
        if route.method not in ("HEAD", "OPTIONS")
    }
    documented = {(method, path) for path, method, _ in operations()}
    # An operation documented only to say which method to use (GET /webcams/token: 405) is
    # the router's own answer, not a route.
    refused = {
        (method, path) for path, method, op in operations() if set(op["responses"]) == {"405"}
    }
    pages = {("get", path) for path in apidocs.PATHS}  # /, /docs: pages, not operations
    assert routed - documented - pages == set(), "routes missing from the document"
    assert documented - refused - routed == set(), "documented operations the server does not have"
    assert refused & routed == set(), "a route answers what is documented as a 405"


def test_path_parameters_match_the_templates():
    for path, method, op in operations():
        names = set(re.findall(r"\{(\w+)\}", path))
        declared = {p["name"] for p in op.get("parameters", []) if p.get("in") == "path"}
        assert names == declared, f"{method} {path}"


def test_geocoding_operations_document_their_problems():
    geocoding_ops = [(p, m, op) for p, m, op in operations() if "geocoding" in op["tags"]]
    assert len(geocoding_ops) == 4
    for path, method, op in geocoding_ops:
        where = f"{method.upper()} {path}"
        # The countries list takes no parameters (unknown ones are ignored): it has no 400.
        own = [p for p in op.get("parameters", []) if "$ref" not in p]
        statuses = (400, 429, 500, 503) if own else (429, 500, 503)
        for status in statuses:
            assert_problem(op, status, where)
        assert {} in op["security"], f"{where}: geocoding must not require a key"
        assert "403" not in op["responses"], f"{where}: geocoding never answers 403"
    assert_problem(DOC["paths"]["/geocoding/lookup"]["get"], 404, "lookup")
    assert_problem(DOC["paths"]["/geocoding/countries/{code}"]["get"], 404, "country")


def test_keyed_operations_document_403_and_429():
    keyed = [(p, m, op) for p, m, op in operations() if op["security"] and {} not in op["security"]]
    assert {p for p, _, _ in keyed} == {
        "/air-quality/{coordinates}",
        "/forecast/{coordinates}",
        "/webcams",
        "/webcams/token",
        "/webcams/clusters",
        "/webcams/{public_id}",
        "/webcams/{public_id}/snapshots",
        "/webcams/embed/{public_id}",
    }
    for path, method, op in keyed:
        for status in (403, 429, 500, 503):
            assert_problem(op, status, f"{method.upper()} {path}")
        headers = op["responses"]["429"]["headers"]
        assert {"Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(
            headers
        )


def test_every_operation_that_refuses_with_403_documents_the_429_of_the_refusal_budget():
    # Refusals draw from a budget per client address (an unlimited image link's too).
    for path, method, op in operations():
        if "403" in op["responses"]:
            assert_problem(op, 429, f"{method.upper()} {path}")
            for status in ("403", "429"):
                assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(
                    op["responses"][status]["headers"]
                ), (path, status)


def test_limited_operations_document_rate_limit_and_caching_headers():
    for path, method, op in operations():
        if "service" in op["tags"] or op.get("x-rate-limited") is False:
            continue
        ok = op["responses"]["200"]["headers"]
        assert {"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"} <= set(ok), path
        assert "Retry-After" in op["responses"]["503"]["headers"], path
        if method == "get" and path != "/webcams/embed/{public_id}":
            assert "ETag" in ok and "X-Data-Version" in ok and "304" in op["responses"], path
    # The player page holds the time it was made: never the same twice, so no tag.
    embed = dict(((p, m), op) for p, m, op in operations())[("/webcams/embed/{public_id}", "get")]
    assert "ETag" not in embed["responses"]["200"]["headers"] and "304" not in embed["responses"]


def test_operations_reading_a_key_document_the_400_of_a_key_sent_twice():
    for path, method, op in operations():
        reads_key = any("ApiKeyHeader" in scheme for scheme in op["security"])
        text = op["responses"].get("400", {}).get("description", "")
        assert ("API key sent more than once" in text) is reads_key, f"{method.upper()} {path}"


def test_security_schemes():
    schemes = DOC["components"]["securitySchemes"]
    assert schemes["ApiKeyHeader"] == {
        **schemes["ApiKeyHeader"],
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    assert schemes["ApiKeyQuery"] == {
        **schemes["ApiKeyQuery"],
        "type": "apiKey",
        "in": "query",
        "name": "api_key",
    }
    assert DOC["paths"]["/geocoding/reverse"]["get"]["security"] == [
        {},
        {"ApiKeyHeader": []},
        {"ApiKeyQuery": []},
    ]
    assert {"ClustersToken": []} in DOC["paths"]["/webcams/clusters"]["get"]["security"]
    assert DOC["paths"]["/webcams/embed/{public_id}"]["get"]["security"] == [{"EmbedToken": []}]


def anchored(server_pattern: str) -> set[str]:
    """The server full-matches its patterns; the document anchors them."""
    return {f"^{server_pattern}$", f"^(?:{server_pattern})$"}


def test_documented_patterns_are_the_servers():
    lookup = "/geocoding/lookup"
    assert parameter(lookup, "id")["schema"]["pattern"] in anchored(geocoding.ID.pattern)
    assert parameter(lookup, "country")["schema"]["pattern"] in anchored(geocoding.COUNTRY.pattern)
    assert parameter(lookup, "language")["schema"]["pattern"] in anchored(languages.PATTERN)
    code = parameter("/geocoding/countries/{code}", "code")["schema"]["pattern"]
    assert code in anchored(geocoding.COUNTRY.pattern)
    schema_id = DOC["components"]["schemas"]["Location"]["properties"]["id"]["pattern"]
    assert schema_id in anchored(geocoding.ID.pattern)


def _patterns(node):
    """Every `pattern` string in a part of the document."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            else:
                yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_documented_patterns_are_ecmascript_regular_expressions():
    # JSON Schema's patterns are ECMA-262's: no inline flags such as (?i:…) nor Python's (?P<…>),
    # which clients' validators and code generators (JavaScript) reject.
    patterns = list(_patterns(DOC))
    assert patterns
    for pattern in patterns:
        assert not re.search(r"\(\?(?![:=!]|<[=!])", pattern), pattern


@pytest.mark.parametrize(
    "path, parse, base",
    [
        ("/geocoding/lookup", geocoding.parse_lookup, {"q": "zurich"}),
        ("/geocoding/reverse", geocoding.parse_reverse, {"lat": "47.3", "lon": "8.5"}),
    ],
)
def test_documented_limit_bounds_are_the_servers(path, parse, base):
    schema = parameter(path, "limit")["schema"]
    assert parse(base).limit == schema["default"]
    assert parse({**base, "limit": str(schema["maximum"])}).limit == schema["maximum"]
    for bad in (schema["maximum"] + 1, schema["minimum"] - 1):
        with pytest.raises(ApiError) as caught:
            parse({**base, "limit": str(bad)})
        assert caught.value.status == 400


def test_documented_q_length_is_the_servers():
    schema = parameter("/geocoding/lookup", "q")["schema"]
    geocoding.parse_lookup({"q": "x" * schema["minLength"]})
    geocoding.parse_lookup({"q": "x" * schema["maxLength"]})
    for bad in ("x" * (schema["minLength"] - 1), "x" * (schema["maxLength"] + 1)):
        with pytest.raises(ApiError):
            geocoding.parse_lookup({"q": bad})


def test_schema_examples_match_their_schemas():
    registry = Registry().with_resource(
        "urn:openapi", Resource.from_contents(DOC, default_specification=DRAFT202012)
    )
    checked = 0
    for name, schema in DOC["components"]["schemas"].items():
        for example in schema.get("examples", []):
            validator = Draft202012Validator(
                {"$ref": f"urn:openapi#/components/schemas/{name}"}, registry=registry
            )
            errors = [e.message for e in validator.iter_errors(example)]
            assert not errors, f"{name}: {errors}"
            checked += 1
    assert checked >= 5


def test_documented_webcam_parameters_are_the_servers():
    from server.webcams import queries
    from server.webcams.snapshots import RANGES

    listing = "/webcams"
    assert parameter(listing, "location")["schema"]["pattern"] in anchored(queries.LOCATION.pattern)
    assert parameter(listing, "country")["schema"]["pattern"] in anchored(queries.COUNTRY.pattern)
    detail = DOC["paths"]["/webcams/{public_id}"]["get"]["parameters"][0]
    assert detail["schema"]["pattern"] in anchored(queries.PUBLIC_ID.pattern)
    schema = parameter(listing, "limit")["schema"]
    assert queries.list_query({}).limit == schema["default"]
    assert queries.list_query({"limit": str(schema["maximum"])}).limit == 200
    for bad in (schema["maximum"] + 1, schema["minimum"] - 1):
        with pytest.raises(ApiError):
            queries.list_query({"limit": str(bad)})
    zoom = parameter("/webcams/clusters", "zoom")["schema"]
    assert (zoom["minimum"], zoom["maximum"]) == (1, 18)
    ranges = parameter("/webcams/{public_id}/snapshots", "range")["schema"]["enum"]
    assert tuple(ranges) == RANGES


def test_documented_offset_bound_is_the_servers():
    schema = parameter("/webcams", "offset")["schema"]
    assert schema["maximum"] == queries.OFFSET_MAX == 10**18 - 1
    assert queries.list_query({"offset": str(schema["maximum"])}).offset == schema["maximum"]
    with pytest.raises(ApiError):
        queries.list_query({"offset": str(schema["maximum"] + 1)})


def test_the_document_itself_is_cacheable():
    op = DOC["paths"]["/openapi.json"]["get"]
    assert "ETag" in op["responses"]["200"]["headers"]
    assert "304" in op["responses"] and op["parameters"] == [
        {"$ref": "#/components/parameters/IfNoneMatch"}
    ]
