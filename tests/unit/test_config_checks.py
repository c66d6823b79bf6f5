"""A config.json that cannot describe a model is refused in one line naming the field and the file (arch/hf.py):
more experts per token than experts, a context window of 0, a checkpoint dtype no one knows. Real configs from the
catalog, one field changed."""

from __future__ import annotations

import json

import pytest

from tokenomy.catalog import loader

MIXTRAL = loader.ROOT / "models" / "mistralai--Mixtral-8x7B-v0.1.json"


@pytest.mark.parametrize("field, value, says", [
    ("num_experts_per_tok", 16, "must be in 1..8"), ("num_experts_per_tok", 0, "must be"),
    ("max_position_embeddings", 0, "must be a positive integer"),
    ("torch_dtype", "float8", "allowed: bfloat16, float16, float32")])
def test_a_config_that_describes_no_model_is_refused(tmp_path, field, value, says):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(MIXTRAL.read_text()), field: value}))
    with pytest.raises(loader.CatalogError) as e:
        loader.model(str(path))
    msg = str(e.value)
    assert f"'{field}'" in msg and says in msg and str(path) in msg and "\n" not in msg


def test_the_unchanged_config_loads_and_routes_two_of_eight():
    mlp = loader.model(str(MIXTRAL)).layers[0].mlp
    assert (mlp.num_experts, mlp.experts_per_tok) == (8, 2)
