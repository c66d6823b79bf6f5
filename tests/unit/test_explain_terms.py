"""--explain names the efficiency terms the pass ran under (core/explain.efficiency_terms): rho only where the
compute dtype has 8 bits or fewer, each value the chip's fitted or anchored one."""

from tokenomy.answers.resolve import deployment
from tokenomy.core.explain import efficiency_terms
from tokenomy.core.layout import Layout
from tokenomy.validation.load import efficiency_for


def test_fp8_names_rho_and_bf16_does_not():
    t = efficiency_for("h100-sxm").terms
    fp8 = efficiency_terms(deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8), weight_dtype="fp8"))
    bf16 = efficiency_terms(deployment("llama-3.1-70b", "hgx-h100-8", layout=Layout(8), weight_dtype="bf16"))
    assert f"rho {t.narrow_flops_ratio:.3g} (fp8)" in fp8 and "rho" not in bf16
    for line in (fp8, bf16):
        assert f"eta_hbm {t.hbm_fraction:.3g}" in line and f"eta_kv {t.kv_hbm_fraction:.3g}" in line
        assert line.startswith("calibrated (h100-sxm)")


def test_a100_fp8_weights_run_bf16_math_without_rho():
    line = efficiency_terms(deployment("llama-3.1-8b", "a100-80gb-sxm", layout=Layout(1), weight_dtype="fp8"))
    assert "rho" not in line  # no FP8 tensor cores on an A100: the GEMMs are 16-bit


def test_two_batch_overlap_names_the_sms_its_kernels_hold():
    dep = deployment("deepseek-v3", "hgx-h100-8", layout=Layout(tp=1, ep=8), serving_engine="sglang")
    assert "SMs held" not in efficiency_terms(dep)  # no two-batch overlap by default
    line = efficiency_terms(dep.with_(eff=dep.eff.with_(ep_overlap=1.0)))
    assert "EP overlap eps 1 (SMs held: normal 0.152, low-latency 0.35)" in line  # catalog/engines/sglang.toml
