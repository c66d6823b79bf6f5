"""tokenomy train: parse the options, call answers.training.train, render. Importing it registers lifecycle and rl."""

from __future__ import annotations

import typer

from tokenomy.cli.app import app, guarded
from tokenomy.cli.render import show_result
from tokenomy.cli.options import CSV, EXPLAIN, JSON, SET, what_if

# core.memory's SCHEDULES and STRATEGIES, written out so --help loads no numpy (tests/cli/test_cli_lazy.py checks them)
SCHEDULES = "gpipe, 1f1b, interleaved, dualpipe, zb-h1, zb-h2, zb-v"
STRATEGIES = "none, selective, modules, op, full, reversible"
# core.attention_kernel's ATTENTION_KERNELS and core.fp8_casts' FP8_SCALINGS, likewise
ATTENTION_KERNELS = "fused, fa2"
FP8_SCALINGS = "fused, tensorwise"


@app.command("train")
@guarded
def train_cmd(
        model: str = typer.Option(None, "--model", help="Catalog name, config.json path, or directory."),
        hardware: str = typer.Option("h100-sxm", "--hardware", help="Chip or system (tokenomy hardware)."),
        set_: str = SET,
        dp: int = typer.Option(None, "--dp", help="Data parallel (default: chips / (tp*pp*cp))."),
        chips: int = typer.Option(None, "--chips", help="Total chips (default: the system's, or dp*tp*pp*cp)."),
        tp: int = typer.Option(1, "--tp", help="Tensor parallel (with sequence parallelism unless --no-sp)."),
        pp: int = typer.Option(1, "--pp", help="Pipeline stages."),
        cp: int = typer.Option(1, "--cp", help="Context parallel (ring attention)."),
        ep: int = typer.Option(1, "--ep", help="Expert parallel (ranks drawn from dp*cp)."),
        ep_overlap: float = typer.Option(0.0, "--ep-overlap",
                                         help="Share of compute hiding EP all-to-alls (0-1; 1 = Megatron's "
                                              "--overlap-moe-expert-parallel-comm, Megatron-Bridge moe_a2a_overlap; "
                                              "--schedule dualpipe hides them all)."),
        zero: int = typer.Option(1, "--zero", help="ZeRO stage 0-3 (3 = FSDP)."),
        fsdp: bool = typer.Option(False, "--fsdp", help="Shorthand for --zero 3."),
        no_sp: bool = typer.Option(False, "--no-sp", help="Tensor parallel without sequence parallelism."),
        schedule: str = typer.Option("1f1b", "--schedule", help=f"Pipeline schedule: one of {SCHEDULES} "
                                                             "(DualPipe: DeepSeek-V3's, even --pp; zb-*: "
                                                             "zero-bubble, Qi et al. 2024, --pp > 1)."),
        virtual_stages: int = typer.Option(1, "--virtual-stages", help="Model chunks per chip (interleaved)."),
        recompute: str = typer.Option("selective", "--recompute",
                                      help=f"Activation recompute: one of {STRATEGIES} (selective: core attention; "
                                           "modules: norms, MLA up-projections, SwiGLU; op: torchtitan's op-level "
                                           "policy, every second matmul)."),
        recompute_modules: str = typer.Option("", "--recompute-modules",
                                              help="With --recompute selective: Megatron-Core's recompute_modules, "
                                                   "a comma list of core_attn, moe_act, layernorm, mla_up_proj, "
                                                   "mlp, moe, shared_experts (empty: core_attn; Megatron-Bridge's "
                                                   "DeepSeek-V3 GB300 preset: mla_up_proj)."),
        micro_batch: int = typer.Option(1, "--micro-batch", help="Sequences per micro-batch."),
        seq_len: int = typer.Option(4096, "--seq-len", help="Tokens per sequence."),
        global_batch: str = typer.Option("1024", "--global-batch", help="Sequences per step; comma list."),
        tokens: float = typer.Option(None, "--tokens", help="Train on this many tokens: time, chip-hours, $."),
        mfu: float = typer.Option(None, "--mfu", help="Use this MFU for the step time (else modelled); refused "
                                                     "above the layout's cap (bubble and exposed comms at full "
                                                     "matmul speed)."),
        flops_fraction: float = typer.Option(None, "--flops-fraction",
                                             help="Achievable fraction of peak in matmuls (default: the chip's "
                                                  "fitted training terms, see --efficiency)."),
        efficiency: str = typer.Option("calibrated", "--efficiency",
                                       help="calibrated (the chip's fitted training terms; default) or roofline."),
        tp_overlap: float = typer.Option(0.0, "--tp-overlap",
                                         help="Share of compute hiding TP collectives (0-1; 1 = --tp-comm-overlap)."),
        attention: str = typer.Option("causal", "--attention", help="MFU's attention FLOPs: full | causal | none."),
        compute_dtype: str = typer.Option("bf16", "--compute-dtype", help="Matmul dtype (sets the peak)."),
        weight_dtype: str = typer.Option("bf16", "--weight-dtype", help="Working weights dtype."),
        grad_dtype: str = typer.Option("bf16", "--grad-dtype", help="Gradient dtype."),
        optimizer_dtype: str = typer.Option("fp32", "--optimizer-dtype", help="Adam moments (and master copy)."),
        activation_dtype: str = typer.Option("bf16", "--activation-dtype",
                                             help="Stored activations (fp8: DeepSeek-V3's FP8 caching)."),
        moe_kernels: str = typer.Option("unfused", "--moe-kernels",
                                        help="unfused | fused (grouped GEMM with fused activation and "
                                             "quantisation, the iteration in one CUDA graph)."),
        moe_dispatcher: str = typer.Option("hybridep", "--moe-dispatcher",
                                           help="alltoall | deepep (wait for the host each MoE layer) | hybridep | "
                                                "token_drop."),
        bf16_layers_at_end: int = typer.Option(0, "--bf16-layers-at-end",
                                               help="The recipe's last layers whose GEMMs stay in BF16 under FP8 / "
                                                    "NVFP4 (Nemotron-3-Super's NVFP4 recipe: 14)."),
        offload_layers: int = typer.Option(0, "--offload-layers",
                                           help="Layers whose activations go to host memory between forward and "
                                                "backward (Megatron-Core cpu_offloading_num_layers; memory only)."),
        flash_attention: bool = typer.Option(False, "--flash-attention", help="No s^2 scores stored (FlashAttention)."),
        attention_kernel: str = typer.Option("fused", "--attention-kernel",
                                             help=f"Core-attention kernel: one of {ATTENTION_KERNELS} (fused: cuDNN / "
                                                  "FA3 class, Megatron, NeMo, DeepSeek; fa2: PyTorch SDPA's "
                                                  "FlashAttention-2 at 35% of the 16-bit peak, torchtitan)."),
        fp8_scaling: str = typer.Option("fused", "--fp8-scaling",
                                        help=f"FP8 operand casts with --compute-dtype fp8: one of {FP8_SCALINGS} "
                                             "(fused: Transformer Engine's, per-tensor or block-scaled as "
                                             "DeepSeek-V3, inside the neighbouring kernels; tensorwise: torchao "
                                             "Float8Linear's dynamic per-tensor casts as HBM passes of their own)."),
        dropout: bool = typer.Option(False, "--dropout", help="Store dropout masks (Korthikanti's setting)."),
        published: str = typer.Option(None, "--published", help="Check a published run (or 'all')."),
        search: bool = typer.Option(False, "--search", help="The fastest layouts that fit (tp, cp, pp, ep, "
                                                          "schedule, recompute searched) for --chips and "
                                                          "--global-batch."),
        as_json: bool = JSON, as_csv: bool = CSV, show: bool = EXPLAIN) -> None:
    """A training step: FLOPs, compute, communication, bubble, memory per chip; time and $ on --tokens.

    Examples: tokenomy train --model llama-3.1-70b --hardware h100-sxm --chips 1024 --tp 8 --pp 4 --seq-len 8192
    --global-batch 512 --tokens 15e12 --mfu 0.4;   tokenomy train --published all;   DeepSeek-V3's layout:
    tokenomy train --model deepseek-v3 --hardware h800 --chips 2048 --pp 16 --ep 64 --schedule dualpipe --recompute
    modules --moe-dispatcher deepep --seq-len 4096 --global-batch 15360 --compute-dtype fp8 --activation-dtype fp8
    --optimizer-dtype bf16 --flash-attention
    """
    from tokenomy.answers.training import train

    res = train(model=model, hardware=what_if(hardware, set_), dp=dp, chips=chips, tp=tp, pp=pp, cp=cp, ep=ep,
              ep_overlap=ep_overlap, zero=zero, fsdp=fsdp, no_sp=no_sp, schedule=schedule,
              virtual_stages=virtual_stages, recompute=recompute, micro_batch=micro_batch, seq_len=seq_len,
              global_batch=None if published else global_batch, tokens=tokens, mfu=mfu,
              flops_fraction=flops_fraction, efficiency=efficiency, tp_overlap=tp_overlap, attention=attention, compute_dtype=compute_dtype,
              weight_dtype=weight_dtype, grad_dtype=grad_dtype, optimizer_dtype=optimizer_dtype,
              activation_dtype=activation_dtype, moe_kernels=moe_kernels, moe_dispatcher=moe_dispatcher,
              flash_attention=flash_attention, dropout=dropout, published=published, search=search,
              bf16_layers_at_end=bf16_layers_at_end, attention_kernel=attention_kernel, fp8_scaling=fp8_scaling,
              offload_layers=offload_layers, recompute_modules=recompute_modules)
    show_result(res, as_json=as_json, as_csv=as_csv, show=show)
