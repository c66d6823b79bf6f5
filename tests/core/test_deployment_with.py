"""Deployments of one model share its lowered shape (issue 27: one serve of two points lowered the model 20 times),
and a changed model is lowered again."""

from __future__ import annotations

from dataclasses import replace
from unittest import mock

from tokenomy.catalog import loader
from tokenomy.core import deployment
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


def test_copies_of_a_deployment_lower_the_model_once():
    """serve's layout check and each candidate's copy must not lower the model again: counted at shape_of."""
    model = replace(loader.model("llama-3.1-8b"), name="llama-3.1-8b (a copy no other test lowered)")
    dep = Deployment(model, loader.hardware("h100-sxm"))
    with mock.patch.object(deployment, "shape_of", wraps=deployment.shape_of) as lowering:
        copies = [dep.with_(kv_dtype="fp8"), dep.with_(layout=Layout(tp=1, dp=1)), dep]
        shapes = {id(c.shape) for c in copies}
    assert lowering.call_count == 1 and len(shapes) == 1


def test_an_edited_model_is_lowered_afresh():
    """The shape is keyed on the model's value: a model with another hidden size is not served the old shape."""
    model = loader.model("llama-3.1-8b")
    wider = replace(model, hidden_size=2 * model.hidden_size)  # the same name: the key is the value, not the name
    hw = loader.hardware("h100-sxm")
    assert Deployment(wider, hw).shape.hidden_size == 2 * Deployment(model, hw).shape.hidden_size
