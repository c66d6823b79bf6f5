"""The deployment most serving tests stand on: Llama-3.1-70B on 8 x H100 (tp8) under vLLM's profile."""

import numpy as np
import pytest

from tokenomy.answers.resolve import deployment
from tokenomy.answers.workloads import engine_profile
from tokenomy.core.layout import Layout
from tokenomy.serving.scheduler import kv_tokens
from tokenomy.serving.sessions import Agentic


@pytest.fixture(scope="module")
def dep():
    return deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8))


@pytest.fixture(scope="module")
def prof():
    return engine_profile("vllm", 8)


@pytest.fixture(scope="module")
def h100():
    """The session simulator's tests: Llama-3.1-8B on one H100 under vLLM's profile, and its KV bytes per token."""
    dep = deployment("llama-3.1-8b", "h100-sxm", layout=Layout(1))
    prof = engine_profile("vllm", 1)
    return dep, prof, float(np.ravel(kv_tokens(dep, prof, 8192.0).bytes_per_token)[0])


@pytest.fixture(scope="module")
def small_agentic():
    """Agentic trees small enough to step one iteration at a time: a sub-agent pair every third of six turns."""
    return Agentic(turns=6, subagent_every=3, subagent_turns=2, system_prompt_tokens=3000, first_input_tokens=1500,
                   new_input_tokens=1200, output_tokens=120, think_s=2.0)
