"""The small reversible GPT: sizes, parameter count, and equality with its twin."""

import pytest

torch = pytest.importorskip("torch")

from rev_helpers import rel_err  # noqa: E402

from tokenomy.reversible.gpt import RevGPT, RevGPTConfig  # noqa: E402

pytestmark = pytest.mark.torch


def test_from_size_and_parameter_count_closed_form():
    for size in ("nano", "micro", "mini", "small"):
        cfg = RevGPTConfig.from_size(size, vocab_size=50)
        model = RevGPT(cfg)
        assert sum(p.numel() for p in model.parameters()) == cfg.parameter_count()
        assert len(model.stack) == cfg.num_hidden_layers
    with pytest.raises(ValueError, match="allowed: nano"):
        RevGPTConfig.from_size("huge")


def test_reversible_gpt_equals_twin_float64_with_dropout():
    cfg = RevGPTConfig.from_size("nano", vocab_size=20, max_position_embeddings=16,
                                 dropout=0.1)
    torch.manual_seed(0)
    model = RevGPT(cfg).double()
    idx = torch.randint(0, 20, (3, 16))
    targets = torch.randint(0, 20, (3, 16))
    params = list(model.parameters())
    results = []
    for m in (model, model.twin()):
        torch.manual_seed(1)
        logits, loss = m(idx, targets)
        results.append((logits.detach(), loss.detach(), torch.autograd.grad(loss, params)))
    (lr, sr, gr), (lt, st, gt) = results
    assert logits.shape == (3, 16, 20)
    assert torch.equal(lr, lt) and torch.equal(sr, st)
    for a, b in zip(gr, gt):
        assert rel_err(a, b) < 1e-10


def test_twin_copy_is_independent_but_identical():
    cfg = RevGPTConfig.from_size("nano", vocab_size=20, max_position_embeddings=8)
    model = RevGPT(cfg)
    twin = model.twin(share_parameters=False)
    for p, q in zip(model.parameters(), twin.parameters()):
        assert torch.equal(p, q) and p.data_ptr() != q.data_ptr()
    with pytest.raises(ValueError, match="max_position_embeddings"):
        model(torch.zeros(1, 9, dtype=torch.long))
