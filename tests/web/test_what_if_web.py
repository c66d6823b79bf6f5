"""set=field=value,... on the web: every /api answer that takes hardware takes it (and says so in /openapi.json),
the payload names what was set, a bad field is a 422 naming set, and the pages show the custom-chip panel and a
banner naming every number set."""

from __future__ import annotations

import pytest

from tokenomy.web import params as P

DECODE = "/api/decode?model=llama-3.1-70b&hardware=hgx-h100-8&tp=8&batch=8"


def test_every_answer_with_hardware_declares_set(client):
    spec = client.get("/openapi.json").json()
    for name in P.ANSWERS:
        declared = {p["name"] for op in spec["paths"][f"/api/{name}"].values() for p in op["parameters"]}
        assert ("set" in declared) == ("hardware" in declared), name
    assert "set" in {p["name"] for p in spec["paths"]["/api/hardware"]["get"]["parameters"]}


def test_set_moves_the_answer_and_the_payload_names_it(client):
    plain = client.get(DECODE).json()[0]
    out = client.get(DECODE + "&set=hbm_bytes_per_s%3Dx2").json()
    [o] = out["hardware_overrides"]
    assert (o["field"], o["value"], o["factor"], o["source"]) == ("hbm_bytes_per_s", 6.7e12, 2.0, "what-if: set=")
    assert out["rows"][0]["memory_s"] == pytest.approx(plain["memory_s"] / 2, rel=1e-12)
    hw = client.get("/api/hardware?hardware=h100&set=bf16_flops_per_s%3D1.2e15").json()
    assert hw["peak_flops_per_s"]["bf16"] == 1.2e15 and hw["hardware_overrides"][0]["base"] == 989.4e12


@pytest.mark.parametrize("url, says", [
    (DECODE + "&set=hbm%3D2", "hbm: not a hardware field; allowed: hbm_bytes_per_s"),
    (DECODE + "&set=hbm_bytes_per_s%3D0", "hbm_bytes_per_s: must be a finite number > 0"),
    (DECODE + "&set=hbm_bytes_per_s%3D-1", "hbm_bytes_per_s: must be a finite number > 0"),
    (DECODE + "&set=..%2Fetc", "field=value pairs"),
    ("/api/hardware?set=tdp_w%3D9", "needs a hardware to change"),
    ("/api/serve?model=llama-3.1-8b&hardware=h100-sxm&concurrency=4&set=x2", "is not field=value"),
])
def test_a_bad_set_is_422_naming_set(client, url, says):
    r = client.get(url)
    assert r.status_code == 422, r.text
    d = r.json()["detail"][0]
    assert d["loc"][-1] == "set" and says in d["msg"], d


@pytest.mark.parametrize("page", [*(f"/{p}?model=llama-3.1-8b" for p in ("serve", "plan", "latency", "pricing",
                                                                        "speculate", "cache", "train")),
                                  "/workload?model=llama-3.1-8b&concurrency=8", "/lifecycle"])
def test_pages_show_the_panel_and_the_banner(client, page):
    sep = "&" if "?" in page else "?"
    r = client.get(page + sep + "hardware=hgx-h100-8&set=usd_per_chip_hour%3D4.5")
    assert r.status_code == 200, r.text[:500]
    assert 'id="custom-chip"' in r.text and 'value="usd_per_chip_hour=4.5"' in r.text
    banner = r.text[r.text.index('id="what-if"'):]
    assert "<code>usd_per_chip_hour</code>" in banner[:600] and "(×1.67)" in banner[:600]  # 4.5 / 2.69
    bad = client.get(page + sep + "set=usd_per_chip_hour%3D0")
    assert bad.status_code == 422 and 'data-field="set"' in bad.text
