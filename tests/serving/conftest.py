"""The deployment most serving tests stand on: Llama-3.1-70B on 8 x H100 (tp8) under vLLM's profile."""

import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout


@pytest.fixture(scope="module")
def dep():
    return deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8))


@pytest.fixture(scope="module")
def prof():
    return engine_profile("vllm", 8)
