"""DistributedDataParallel over a reversible stack, both find_unused_parameters settings."""

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch


@pytest.mark.skipif(not torch.distributed.is_available() or
                    not torch.distributed.is_gloo_available(), reason="no gloo backend")
def test_ddp_gradients_equal_single_process_mean(tmp_path):
    import torch.multiprocessing as mp

    import rev_ddp_worker

    world = 2
    mp.spawn(rev_ddp_worker.run, args=(world, str(tmp_path / "store")), nprocs=world,
             join=True)
