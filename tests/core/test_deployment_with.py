"""Deployment.with_ keeps the lowered model shape when the model is unchanged (issue 27: one serve of two points
lowered the model 20 times), and lowers again when the model changes."""

from __future__ import annotations

from tokenomy.catalog import loader
from tokenomy.core.deployment import Deployment
from tokenomy.core.layout import Layout


def test_with_keeps_the_shape_unless_the_model_changes():
    hw = loader.hardware("hgx-h100-8")
    dep = Deployment(loader.model("llama-3.1-8b"), hw)
    shape = dep.shape
    other = dep.with_(layout=Layout(tp=2), kv_dtype="fp8")
    assert other.shape is shape and other.layout.tp == 2 and other.kv_dtype == "fp8"
    moved = dep.with_(model=loader.model("llama-3.1-70b"))
    assert moved.shape is not shape and moved.shape.coeffs.dense_params > shape.coeffs.dense_params


def test_copies_of_a_fresh_deployment_share_one_lowering():
    """with_ lowers the original once (if it had not yet) and every copy holds that same shape: serve's layout check
    and each candidate's copy must not lower the model again."""
    dep = Deployment(loader.model("llama-3.1-8b"), loader.hardware("h100-sxm"))
    assert "shape" not in dep.__dict__  # nothing lowered at construction
    first, second = dep.with_(kv_dtype="fp8"), dep.with_(layout=Layout(tp=1, dp=1))
    assert first.__dict__["shape"] is dep.__dict__["shape"] is second.__dict__["shape"]
