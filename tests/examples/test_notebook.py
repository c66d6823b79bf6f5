"""examples/tokenomy_tour.ipynb runs top to bottom on the CPU (nbclient, the venv's own python as the kernel, no
network) and the numbers it prints are the ones tk gives."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")  # dev extra; `make test` installs it
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
KernelManager = pytest.importorskip("jupyter_client").KernelManager
pytest.importorskip("matplotlib")

import tokenomy as tk  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[2] / "examples" / "tokenomy_tour.ipynb"
KERNEL = "tokenomy-venv"


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The notebook after running every cell, in a kernel that is this interpreter (a kernelspec written to a
    temporary JUPYTER_PATH: whatever "python" is on PATH plays no part); figures come back as PNG outputs.

    The kernel talks over Unix sockets (transport "ipc"), not TCP: jupyter_client picks free TCP ports by binding and
    releasing them, and another test of the parallel run (a web server, a Dask cluster) can take one before the kernel
    binds it ("Address already in use", CI of 2026-12-06). Socket files in a fresh directory cannot be taken."""
    spec = tmp_path_factory.mktemp("jupyter") / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "tokenomy venv", "language": "python", "env": {"MPLBACKEND": "module://matplotlib_inline.backend_inline"}}))
    mp = pytest.MonkeyPatch()
    sockets = Path(tempfile.mkdtemp(prefix="tk-nb-"))
    mp.setenv("JUPYTER_PATH", str(spec.parent.parent))
    try:
        nb = nbformat.read(NOTEBOOK, as_version=4)
        # a short directory of its own: a Unix socket path must stay under ~107 bytes
        km = KernelManager(kernel_name=KERNEL, transport="ipc", ip=str(sockets / "k"))
        nbclient.NotebookClient(nb, km=km, kernel_name=KERNEL, timeout=600,
                                resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    finally:
        mp.undo()
        shutil.rmtree(sockets, ignore_errors=True)
    return nb


def answers(nb) -> dict[str, dict]:
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            for line in o.get("text", "").splitlines() if o.get("output_type") == "stream" else []:
                if line.startswith("answer: "):
                    a = json.loads(line[len("answer: "):])
                    out[a.pop("question")] = a
    return out


def test_every_cell_ran_without_error(executed):
    code = [c for c in executed.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, errors
    images = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert len(images) >= 3  # one figure per question at least


def test_three_questions_answered(executed):
    assert set(answers(executed)) == {"cost_vs_batch", "layout_at_64_users", "context_per_architecture"}


def test_cost_vs_batch_numbers_are_tks(executed):
    got = answers(executed)["cost_vs_batch"]
    s = tk.batch(model="llama-3.1-70b", hardware="hgx-h100-8", context=8192).extra["summary"]
    assert got["balance_batch"] == pytest.approx(float(s["balance_batch"]), rel=1e-12)
    assert got["max_batch_fit"] == s["max_batch_fit"] and got["memory_binds"] == s["memory_binds"]
    assert got["usd_per_mtok_batch1"] == pytest.approx(s["cost_batch1_usd_per_mtok"], rel=1e-12)
    assert got["usd_per_mtok_at_max_fit"] == pytest.approx(s["usd_per_mtok_at_operating"], rel=1e-12)


def test_layout_numbers_are_tks(executed):
    got = answers(executed)["layout_at_64_users"]
    best = tk.decode("deepseek-v3", "gb200-nvl72", batch=[64], context=[5120])
    row, plan = best.rows()[0], best.extra["plan"]
    assert got["chosen_plan"] == row["plan"] and got["chosen_tpot_s"] == pytest.approx(row["step_s"], rel=1e-12)
    degrees = {k: plan[k] for k in ("tp", "ep", "pp", "dp", "redundant_experts")}
    ttft = tk.prefill("deepseek-v3", "gb200-nvl72", batch=[plan["dp"]], context=[4096], **degrees).rows()[0]
    assert got["chosen_ttft_s"] == pytest.approx(ttft["step_s"], rel=1e-12)
    assert got["cheapest_usd_per_mtok"] <= row["usd_per_mtok"]


def test_context_numbers_are_tks(executed):
    got = answers(executed)["context_per_architecture"]
    models = [k.split(" ", 1)[1] for k in got]
    rows = {r["model"]: r for r in tk.context_compare(models=models, hardware="hgx-h100-8").rows()}
    assert {f"max_context_batch1 {m}": rows[m]["max_context_batch1"] for m in models} == got
