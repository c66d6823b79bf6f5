"""tokenomy revnet-demo through the real entry point (torch CPU)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent / "tokenomy"


@pytest.mark.torch
def test_revnet_demo_json_curves_match_and_memory_is_lower():
    r = subprocess.run([str(BIN), "revnet-demo", "--steps", "6", "--size", "nano", "--layers", "4", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert len(d["loss_reversible"]) == len(d["loss_standard"]) == 6 and d["layers"] == 4
    assert d["max_abs_loss_diff"] < 1e-4  # same function, same dropout masks: float noise only
    assert d["loss_reversible"][-1] < d["loss_reversible"][0]  # it trains
    assert d["peak_activation_bytes_reversible"] < d["peak_activation_bytes_standard"]


def test_revnet_demo_bad_input():
    r = subprocess.run([str(BIN), "revnet-demo", "--size", "huge"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().splitlines() == ["error: --size: 'huge' not known; allowed: "
                                                                   "nano, micro, mini, small"]
