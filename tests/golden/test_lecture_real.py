"""The lecture's claims on catalog hardware: the chip ratios and drain times lecture.md computes itself (§2.2, §2.3
[I] datasheet arithmetic), and the closing note's disagreements."""

import pytest

from tokenomy.answers.economics import lecture_serving
from tokenomy.lecture_claims.real import closing_note, ratio_rows, real_rows, system_rows


@pytest.fixture(scope="module")
def rows():
    return real_rows(lecture_serving)


# lecture.md §2.2 [I]: R = (FLOP/s / 2) * bytes_per_weight / (B/s)
@pytest.mark.parametrize("chip,want", [("a100-80gb-sxm", 153), ("h100-sxm", 295), ("h200", 206), ("tpu-v4", 229),
                                       ("tpu-v5e", 240), ("gb200", 313)])
def test_chip_ratio_matches_lecture_md(chip, want):
    r = {x.setting.split(" ")[0]: x.real_value for x in ratio_rows() if x.id == "L2"}
    assert r[chip] == pytest.approx(want, abs=1.0)


# lecture.md §2.3 [I]: H100 23.9 ms, H200 29.4 ms, A100-80 39 ms
@pytest.mark.parametrize("chip,want", [("h100-sxm", 0.0239), ("h200", 0.0294), ("a100-80gb-sxm", 0.039)])
def test_drain_times_match_lecture_md(chip, want):
    d = {x.setting: x.real_value for x in ratio_rows() if x.id == "L6"}
    assert d[chip] == pytest.approx(want, rel=0.01)


def test_deepseek_on_real_systems():
    rack = {r.quantity: r for r in system_rows(lecture_serving, "gb200-nvl72")}
    box = {r.quantity: r for r in system_rows(lecture_serving, "hgx-h200-8")}
    # DeepSeek-V3 activates 37B of 671B: sparsity ~18, not the lecture's 8 (lecture.md §2.2 warning)
    assert rack["sparsity N_total/N_active"].real_value == pytest.approx(17.9, abs=0.1)
    # 671 GB of fp8 weights on 72 x 8 TB/s vs 8 x 4.8 TB/s (cf. L26)
    assert rack["weight-read floor (s)"].real_value == pytest.approx(673e9 / (72 * 8e12), rel=0.01)
    assert box["weight-read floor (s)"].real_value == pytest.approx(673e9 / (8 * 4.8e12), rel=0.01)
    # on its real layout (EP with data-parallel attention: every chip reads the dense weights for its share of the
    # sequences) the rack balances above the even split's R*sparsity (lecture.md §2.2)
    assert rack["balance batch (weight fetch = weight compute)"].real_value > 313 * 17.9
    # the rack serves DeepSeek-V3 within the lecture's order of magnitude (L4: 128k tok/s; L27: $0.40/M)
    assert 1e4 < rack["one unit's tokens/s at the operating batch"].real_value < 1e6
    assert rack["$ per M output tokens at the operating batch"].real_value < 4.0


def test_the_box_serves_less_than_the_rack():
    rack = {r.quantity: r for r in system_rows(lecture_serving, "gb200-nvl72")}
    box = {r.quantity: r for r in system_rows(lecture_serving, "hgx-h200-8")}
    assert box["one unit's tokens/s at the operating batch"].real_value < rack[
        "one unit's tokens/s at the operating batch"].real_value


def test_closing_note_lists_every_disagreement(rows):
    note = closing_note(rows)
    assert len(note) == sum(r.agrees is False for r in rows) > 0
    assert any("deepseek-v3" in line and "crossover" in line for line in note)
    assert any(r.agrees for r in rows)
