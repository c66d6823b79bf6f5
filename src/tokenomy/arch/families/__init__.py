"""Adapters of the model families released since early 2025, one module per family of attention kinds:

    sparse.py   indexed sparse and compressed attention: DeepSeek-V3.2 (DSA), DeepSeek-V4 (compressed KV + window +
                hyper-connections), GLM-5 (DSA)
    hybrid.py   linear attention / state-space layers beside full attention: Qwen3.5/3.6 (Gated DeltaNet),
                Kimi-K3 (KimiLinear), Nemotron-3 (Mamba-2)
    recent.py   Kimi-K2.5, MiniMax-M2.5/M3, Llama-4 (chunked local attention, interleaved MoE), Gemma-4 MoE, MiMo-V2
Each module exposes ``ADAPTERS: dict[model_type, adapter]``; arch/hf.py merges them into its registry.
"""
