"""What a serving engine sets on a chip's efficiency set: the one update (``EngineTerms.on``) that the calibrated set
of an answer (answers/resolve.py), an engine profile (serving.engine_profile.EngineProfile.on) and the validation
cases (validation/case_step.py) all make. Each field is a number, or a column of cases (validation)."""

from __future__ import annotations

from dataclasses import dataclass

from tokenomy.core.efficiency import Efficiency


@dataclass(frozen=True)
class EngineTerms:
    """The engine's terms of core/efficiency.py (catalog/engines/<name>.toml at the version run: catalog's
    EngineFile.terms_at): h ([host] overlap_since), ε ([overlap] two_batch_overlap), (s_n, s_ll) ([overlap]
    sm_share_*), o_seq of its runtime ([host] runtimes), e ([prefill_launch]), m ([scheduler] mixed_prefill), B_M
    (its MoE grouped GEMM's tile, [moe_kernel])."""

    host_overlap: object  # h
    ep_overlap: object  # ε
    ep_sm: tuple  # (s_n, s_ll)
    sequence_s: object  # o_seq of the engine's runtime, s per running sequence per step
    eager_prefill_s_per_kernel: object  # e
    mixed_prefill: object  # m
    expert_tile_rows: object  # B_M

    def on(self, eff: Efficiency) -> Efficiency:
        """``eff`` as the engine runs it: its fields set from these, and o_seq = the set's own + the runtime's.

        o_seq is the engine runtime's host seconds per running sequence per step (TensorRT-LLM's C++ executor a few
        us, its Python PyExecutor, vLLM V0 and V1, SGLang each their own) plus the efficiency set's own (0 in the
        catalog's chip files, held by the fit: validation/anchors.py; what a user's calibration measures beyond the
        runtime's). A per-chip o_seq charged every runtime alike was fitted on one runtime's large batches and
        charged to another's (TensorRT-LLM 1.0's PyTorch flow at ~3,000 running set 14-18 us a sequence that
        vLLM's large batches then paid, and the energy fit made up for it in the HBM's pJ/B)."""
        return eff.with_(host_overlap=self.host_overlap, ep_overlap=self.ep_overlap, ep_sm_normal=self.ep_sm[0],
                         ep_sm_low_latency=self.ep_sm[1], sequence_overhead_s=eff.sequence_overhead_s + self.sequence_s,
                         eager_prefill_s_per_kernel=self.eager_prefill_s_per_kernel, mixed_prefill=self.mixed_prefill,
                         expert_tile_rows=self.expert_tile_rows)
