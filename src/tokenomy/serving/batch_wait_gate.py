"""TensorRT-LLM's delayed batching as the simulator runs it: the engine's own counter, step by step.

PyExecutor (PyTorch backend; github.com/NVIDIA/TensorRT-LLM tensorrt_llm/_torch/pyexecutor/py_executor.py at
9521caf4696c1fb79b0f946f0d980f8f0ebd3e64): ``_schedule`` calls ``_waiting_requests`` only without attention-DP and
where the scheduler picked both context and generation requests this iteration ("if no generation requests, no
need to wait, to avoid dead waiting"). ``_waiting_requests`` counts the picked prompts' tokens (len(get_tokens(0)):
the whole prompt) plus 1 per generation request; it releases every picked prompt where its counter has reached
batch_wait_timeout_iters T or the count reaches batch_wait_max_tokens_ratio·max_num_tokens, the counter then 0;
else it holds them all this iteration and the counter advances by one. serving/sim_loop.py asks ``holds`` at step 4
with the prompts its budget admits; the analytic mean of the hold is batch_wait.held_steps.
"""

from __future__ import annotations

from tokenomy.serving.batch_wait import batch_wait_of


class BatchWaitGate:
    """The counter (module docstring): ``iters`` T, ``tokens`` ρ_w·N_tok (batch_wait.batch_wait_of)."""

    def __init__(self, iters: float, tokens: float):
        self.iters, self.tokens, self.count = iters, tokens, 0

    def holds(self, prompt_tokens: int, decodes: int) -> bool:
        """Whether this iteration holds the prompts picked (``prompt_tokens`` in all) beside ``decodes`` generation
        requests; called only where both are present (the engine's own condition)."""
        if self.count >= self.iters or prompt_tokens + decodes >= self.tokens:
            self.count = 0
            return False
        self.count += 1
        return True


def gate_for(prof, layout=None) -> BatchWaitGate | None:
    """The engine's counter for ``prof`` on ``layout`` (the simulators' ``_Run.gate``), or None where delayed
    batching is off (batch_wait.batch_wait_of: either setting 0, or attention-DP)."""
    iters, tokens = batch_wait_of(prof, layout)
    return BatchWaitGate(iters, tokens) if iters > 0.0 else None
