"""The training demo: corpus determinism, matching loss curves, memory printed."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from tokenomy.reversible.corpus import CharTokenizer, generate_corpus  # noqa: E402
from tokenomy.reversible.demo import run_demo  # noqa: E402

pytestmark = pytest.mark.torch

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "revnet_demo.py"


def test_corpus_is_deterministic_and_round_trips():
    a, b = generate_corpus(5000, seed=3), generate_corpus(5000, seed=3)
    assert a == b and len(a) == 5000 and a != generate_corpus(5000, seed=4)
    tok = CharTokenizer(a)
    assert tok.decode(tok.encode(a)) == a
    assert " they " in generate_corpus(50_000) and " it " in generate_corpus(50_000)


def test_demo_loss_curves_match_and_learn():
    r = run_demo(steps=40, seed=0, size="nano", seq_len=32, batch_size=8, corpus_chars=20_000,
                 num_hidden_layers=4)
    rev, std = r["loss_reversible"], r["loss_standard"]
    assert len(rev) == len(std) == 40
    assert r["max_abs_loss_diff"] < 1e-3  # same function, same batches, same masks
    assert sum(rev[-5:]) / 5 < rev[0] - 0.5  # it learns
    assert 0 < r["peak_activation_bytes_reversible"] < r["peak_activation_bytes_standard"]


def test_example_script_main_prints_curves_and_memory(capsys):
    spec = importlib.util.spec_from_file_location("revnet_demo", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--steps", "3", "--size", "nano", "--every", "1"]) == 0
    out = capsys.readouterr().out
    assert "loss reversible" in out and "peak activation memory, reversible" in out
