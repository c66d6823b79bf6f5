"""The layouts and recipes people publish, typed as ``tokenomy train`` flags (issue 31 Deliver 2): each gives the step
the validation predictor gives its case (tokenomy validate, the same training terms), so what the catalog validates
is what a user can ask. The flags are written out by hand from each source, not read from the case."""

import json

import pytest
from cli_runner import CliRunner

import tokenomy as tk
import tokenomy.cli.commands  # noqa: F401  (registers every command)
from tokenomy.cli import app


def cli_rows(*args: str) -> list[dict]:
    r = CliRunner().invoke(app, ["train", *args, "--json"])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    return out["rows"] if isinstance(out, dict) else out  # with --set: {"hardware_overrides": ..., "rows": ...}


# a what-if chip with twice the HBM: a capacity, no term of the step, so a layout the memory model refuses still
# gets its step (the validation predictor times every case whether or not it fits)
BIG = ("--set", "hbm_bytes=x2")


def predicted_s(source: str, case_id: str) -> float:
    """The validation predictor's step for one case under the stored terms (tokenomy validate --cases)."""
    rows = tk.validate(source=[source], training=True, cases=True).rows()
    return next(r["calibrated"] for r in rows if r["id"] == case_id)


# DeepSeek-V3 report §3.2: 2,048 H800, PP16 with DualPipe (its EP all-to-alls hidden under the paired chunk), EP64,
# ZeRO-1, no TP; FP8 GEMMs (block-scaled: Transformer-Engine-class fused casts, --fp8-scaling fused, the default);
# RMSNorm and MLA up-projections recomputed (modules); its own all-to-all kernels (deepep); seq 4K, batch 15,360.
DEEPSEEK_V3 = ("--model", "deepseek-v3", "--hardware", "h800", "--chips", "2048", "--pp", "16", "--ep", "64",
               "--schedule", "dualpipe", "--recompute", "modules", "--moe-dispatcher", "deepep", "--seq-len", "4096",
               "--global-batch", "15360", "--compute-dtype", "fp8", "--fp8-scaling", "fused", "--flash-attention")


def test_deepseek_v3_published_layout_is_its_validation_case():
    want = predicted_s("deepseek-v3-2024-training", "deepseek-v3-pretraining-h800-2048gpu-fp8")
    # the case stores what the defaults store (bf16 activations, FP8 GEMM inputs, fp32 Adam moments): on the what-if
    # H800 with twice the HBM the same bytes give the same step
    same = cli_rows(*DEEPSEEK_V3, *BIG)[0]
    assert same["fits"] and same["ep_overlap"] == 1.0 and same["schedule"] == "dualpipe"
    assert same["step_s"] == pytest.approx(want, rel=1e-9)
    # the run as published fits on the real H800: FP8 activation caching and BF16 optimizer moments (report §3.3);
    # its pipeline sends then carry FP8 activations, a step within 0.1% of the case's
    run = cli_rows(*DEEPSEEK_V3, "--activation-dtype", "fp8", "--optimizer-dtype", "bf16")[0]
    assert run["fits"] and run["step_s"] == pytest.approx(want, rel=1e-3) and run["step_s"] < want


def test_megatron_bridge_deepseek_v3_recipe_with_ep_overlap_is_its_validation_case():
    # Megatron-Bridge 26.04.01 DeepSeek-V3 on 256 B200 (FP8 MX): PP8 with 2 virtual stages, EP32, DeepEP, and
    # moe_a2a_overlap (Megatron's --overlap-moe-expert-parallel-comm): --ep-overlap 1; its preset
    # (DEEPSEEK_V3_PRETRAIN_CONFIG_B200_FP8_MX_V2) recomputes mla_up_proj and the dense mlp: --recompute-modules
    args = ("--model", "deepseek-v3", "--hardware", "b200", "--chips", "256", "--pp", "8", "--schedule", "interleaved",
            "--virtual-stages", "2", "--ep", "32", "--moe-dispatcher", "deepep", "--recompute", "selective",
            "--recompute-modules", "mla_up_proj,mlp", "--seq-len",
            "4096", "--global-batch", "4096", "--compute-dtype", "fp8", "--flash-attention", "--tp-overlap", "1")
    want = predicted_s("megatron-bridge-26.04.01", "mbridge260401-deepseek-v3-b200-256gpu-mxfp8")
    # the DeepSeek-V3 recipe's precision-aware optimizer keeps bf16 Adam moments; Transformer Engine keeps each FP8
    # GEMM's quantized input (core/memory.with_gemm_inputs): it fits the B200's 192 GB as it ran
    args += ("--optimizer-dtype", "bf16")
    row = cli_rows(*args, "--ep-overlap", "1")[0]
    assert row["fits"] and row["step_s"] == pytest.approx(want, rel=1e-9)
    assert cli_rows(*args, "--ep-overlap", "0")[0]["step_s"] > row["step_s"]


def test_llama3_405b_megatron_bridge_recipe_is_its_validation_case():
    # Megatron-Bridge 26.04.01 Llama 3.1 405B on 1,024 H100 (FP8): TP8 PP8 CP2 with 8 virtual stages, TP comm
    # overlap, micro-batch 1, global batch 1,536 of 8K
    args = ("--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--chips", "1024", "--tp", "8", "--pp", "8",
            "--cp", "2", "--schedule", "interleaved", "--virtual-stages", "8", "--tp-overlap", "1", "--recompute",
            "none", "--seq-len", "8192", "--global-batch", "1536", "--compute-dtype", "fp8", "--flash-attention")
    want = predicted_s("megatron-bridge-26.04.01", "mbridge260401-llama-3.1-405b-h100-sxm-1024gpu-fp8")
    row = cli_rows(*args)[0]
    assert row["fits"] and row["step_s"] == pytest.approx(want, rel=1e-9)


def test_llama3_405b_metas_layout_on_the_cli():
    # Llama 3 paper Table 4: 16,384 H100, TP8 CP1 PP16 DP128, 16M-token batches (2,048 x 8K), interleaved; 15.6T
    # tokens, 30.84M GPU-hours on the model card at >90% effective training time. Accepted, fits in the H100's
    # usable HBM, and within 10% of the published hours at that goodput; MFU in Meta's 38-43% band, widened by 3 pt.
    row = cli_rows("--model", "llama-3.1-405b", "--hardware", "h100-sxm", "--chips", "16384", "--tp", "8", "--cp",
                   "1", "--pp", "16", "--schedule", "interleaved", "--virtual-stages", "7", "--seq-len", "8192",
                   "--global-batch", "2048", "--flash-attention", "--tokens", "15.6e12")[0]
    assert row["fits"] and row["dp"] == 128 and row["tokens_per_step"] == 2048 * 8192
    assert row["chip_hours"] / 0.9 == pytest.approx(30.84e6, rel=0.10)
    assert 0.35 < row["mfu"] < 0.46


def test_torchtitan_float8_recipe_is_its_validation_case():
    # torchtitan (2024-12) Table 1: Llama 3.1 8B on 8 H100 (96 GB, 500 W), FSDP + torch.compile + Float8: PyTorch
    # SDPA's FlashAttention-2 and torchao's dynamic per-tensor (tensorwise) FP8 casts
    args = ("--model", "llama-3.1-8b", "--hardware", "h100-sxm-96gb-500w", "--chips", "8", "--fsdp", "--micro-batch",
            "2", "--seq-len", "8192", "--global-batch", "16", "--recompute", "op", "--compute-dtype", "fp8",
            "--attention-kernel", "fa2", "--fp8-scaling", "tensorwise", "--flash-attention")
    want = predicted_s("torchtitan-2024-12", "torchtitan-llama-3-1-8b-h100-8gpu-fsdp-compile-fp8")
    # torchtitan's op-level selective checkpointing (core/op_sac.py): it fits the 96 GB chip, as it ran (76.8 GiB)
    row = cli_rows(*args)[0]
    assert row["fits"] and row["step_s"] == pytest.approx(want, rel=1e-9)
    fused = cli_rows(*args[:-5], "--flash-attention")[0]  # Transformer Engine-class kernels: no cast passes, no FA2
    assert fused["step_s"] < row["step_s"]


def test_megatron_bridge_fsdp_llama_70b_recipe_with_cpu_offload():
    # Megatron-Bridge 26.04.01 Llama 3.1 70B on 64 GB200 (FP8-CS): Megatron FSDP, micro-batch 2, global batch 256 of
    # 8K, cpu_offloading_num_layers 40 (LLAMA3_70B_PRETRAIN_CONFIG_GB200_FP8_CS_V2, workload_base_configs v0.4.2);
    # the offload is memory only: the same step as the validation case, which fits only with it
    args = ("--model", "llama-3.1-70b", "--hardware", "gb200", "--chips", "64", "--fsdp", "--micro-batch", "2",
            "--recompute", "none", "--seq-len", "8192", "--global-batch", "256", "--compute-dtype", "fp8",
            "--flash-attention", "--tp-overlap", "1")
    want = predicted_s("megatron-bridge-26.04.01", "mbridge260401-llama-3.1-70b-gb200-64gpu-fp8")
    row = cli_rows(*args, "--offload-layers", "40")[0]
    assert row["fits"] and row["step_s"] == pytest.approx(want, rel=1e-9)
    assert not cli_rows(*args)[0]["fits"]
