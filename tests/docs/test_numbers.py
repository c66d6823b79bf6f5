"""Every number README.md and the docs pages quote is the tool's (docs/numbers.py renders them from
docs/templates/): the committed pages equal a fresh render, and the check names a stale figure."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "docs" / "numbers.py"


def _module():
    spec = importlib.util.spec_from_file_location("docs_numbers", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_pages_hold_the_tools_numbers():
    r = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, (r.stdout + r.stderr) + "\nrun: python docs/numbers.py --write"


def test_every_template_renders_to_a_page_that_says_so():
    mod = _module()
    templates = sorted(mod.TEMPLATES.glob("*.md"))
    assert any(t.name == "README.md" for t in templates)
    for t in templates:
        assert mod.target(t).read_text().startswith(mod.BANNER.format(name=t.name)), t.name


def test_check_names_the_stale_figure(tmp_path):
    mod = _module()
    page = tmp_path / "page.md"
    page.write_text("TPOT 21.8 ms, TTFT 60.2 ms\n")
    rendered = {page: ("TPOT 22.9 ms, TTFT 60.2 ms\n", {"s70_tpot": "22.9 ms", "s70_ttft": "60.2 ms"})}
    problems = mod.check(rendered)
    assert len(problems) == 1 and "{{s70_tpot}} = '22.9 ms'" in problems[0] and "s70_ttft" not in problems[0]
    page.write_text("TPOT 22.9 ms, TTFT 60.2 ms\n")
    assert mod.check(rendered) == []


def test_a_figure_no_group_computes_is_refused():
    mod = _module()
    with pytest.raises(SystemExit, match="zz_nothing"):
        mod.figures_for({"zz_nothing"})


def test_every_placeholder_has_a_group():
    mod = _module()
    names = {n for t in mod.TEMPLATES.glob("*.md") for n in mod.PLACEHOLDER.findall(t.read_text())}
    assert names and all(any(n.startswith(p) for p in mod.GROUPS) for n in names), names


def test_error_band_text_follows_the_row():
    mod = _module()
    assert mod._band({"tpot_s": 0.020, "tpot_s_p10": 0.018, "tpot_s_p90": 0.023}, "tpot_s") == " (-10%/+15%)"
    assert mod._band({"tpot_s": 0.020}, "tpot_s") == ""
