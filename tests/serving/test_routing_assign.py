"""serving/routing.assign: the key routers both the routing comparison and the validation's llm-d cases use."""

import numpy as np
import pytest

from tokenomy.serving.routing import assign


def test_group_sticky_keeps_a_key_on_one_replica_and_spreads_keys():
    key = np.array([3, 1, 3, 2, 1, 0, 3])
    where = assign("group-sticky", 2, key)
    for k in set(key.tolist()):
        assert len(set(where[key == k].tolist())) == 1
    assert set(where.tolist()) == {0, 1}


def test_round_robin_ignores_the_key_and_random_uses_every_replica():
    assert assign("round-robin", 3, np.zeros(6, int)).tolist() == [0, 1, 2, 0, 1, 2]
    got = assign("random", 4, np.zeros(400, int), np.random.default_rng(0))
    assert set(got.tolist()) == {0, 1, 2, 3}


def test_an_unknown_router_is_refused_naming_the_field():
    with pytest.raises(ValueError, match="routing: 'nearest'"):
        assign("nearest", 2, np.zeros(3, int))
