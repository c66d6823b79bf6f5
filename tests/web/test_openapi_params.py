"""/openapi.json is the API's own description: each endpoint declares exactly the query parameters it accepts,
with a type, the bounds and allowed values it enforces, and a line of help."""

from __future__ import annotations

import pytest

from tokenomy.web import params as P

FILLER = {"model": "llama-3.1-8b", "hardware": "h100-sxm"}


@pytest.fixture(scope="module")
def schema(client):
    return client.get("/openapi.json").json()


def api_paths(schema):
    return sorted(p for p in schema["paths"] if p.startswith("/api/"))


def declared(schema, path) -> dict[str, dict]:
    op = next(iter(schema["paths"][path].values()))
    return {p["name"]: p for p in op.get("parameters", [])}


def unknown_refusal(client, path, params) -> str | None:
    """The name an 'unknown parameter' refusal points at, if the endpoint refused one."""
    r = client.request("POST" if path == "/api/upload" else "GET", path, params=params)
    d = r.json()["detail"][0] if r.status_code == 422 else None
    return d["loc"][-1] if d and d["msg"].startswith("unknown parameter") else None


def test_every_answer_is_an_endpoint_of_the_schema(schema):
    assert {f"/api/{c}" for c in P.ANSWERS} | {"/api/models", "/api/model", "/api/hardware", "/api/upload"} \
        == set(api_paths(schema))


def test_each_endpoint_accepts_what_it_declares_and_refuses_the_rest(client, schema):
    """Behaviour, not the table: each declared name passes the endpoint's own check of names; an undeclared one
    does not."""
    for path in api_paths(schema):
        names = declared(schema, path)
        for name in names:
            assert unknown_refusal(client, path, {name: "1"}) is None, (path, name)
        assert unknown_refusal(client, path, {"zz_undeclared": "1"}) == "zz_undeclared", path


def test_the_required_ones_are_required(client, schema):
    for path in api_paths(schema):
        for name, p in declared(schema, path).items():
            if p["required"]:
                others = {k: v for k, v in FILLER.items() if k in declared(schema, path) and k != name}
                r = client.get(path, params=others)
                assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == name, (path, name)


def test_each_parameter_has_a_type_and_help(schema):
    for path in api_paths(schema):
        for name, p in declared(schema, path).items():
            assert p["in"] == "query" and p["schema"]["type"] in ("integer", "number", "boolean", "string"), name
            assert len(p["description"]) > 10, (path, name)
        assert next(iter(schema["paths"][path].values()))["description"], path


def test_declared_bounds_and_enums_are_the_enforced_ones(client, schema):
    """A number's declared bounds pass its range check; outside them is refused naming it; every enum
    value of a dtype/choice passes and a value outside the enum is refused."""
    path = "/api/decode"
    params = declared(schema, path)
    for name, p in params.items():
        s = p["schema"]
        if s["type"] in ("integer", "number") and "minimum" in s:
            for value, refused in ((s["minimum"], False), (s["maximum"], False), (s["maximum"] * 2 + 1, True)):
                r = client.get(path, params={**FILLER, name: str(value)})
                d = r.json()[0] if r.status_code == 200 else r.json()["detail"][0]
                out = r.status_code == 422 and d["loc"][-1] == name and "out of range" in d["msg"]  # not the answer's
                assert out == refused, (name, value, r.text[:200])
        if "enum" in s and name not in ("model", "hardware"):
            for value in s["enum"]:
                r = client.get(path, params={**FILLER, name: value})
                assert not (r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == name), (name, value)
            r = client.get(path, params={**FILLER, name: "zz"})
            assert r.json()["detail"][0]["loc"][-1] == name


def test_catalog_names_are_enums(schema):
    from tokenomy.catalog import loader

    p = declared(schema, "/api/decode")
    assert p["model"]["schema"]["enum"] == loader.model_names()
    assert set(P.hardware_names()) == set(p["hardware"]["schema"]["enum"])
    assert "required unless config" in p["model"]["description"] and not p["model"]["required"]
