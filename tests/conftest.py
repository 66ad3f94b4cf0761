"""Test-wide settings.

- One torch thread per process: runs are reproducible per thread count, and two threads spin against each other
  on a loaded 2-core machine.
- The CPU in fp32 unless a test picks an accelerator itself: many tests compare with CPU references to tight
  tolerances, and on a GPU machine the default accelerator would be CUDA with bf16. Device-parametrised tests
  enter `accelerator_scope` for each of `available_devices()`; a RunSpec's own device applies inside its run.
- A feature cache of each test's own ($LIFELONG_CACHE under tmp_path): no test reads features another test (or
  the user) cached, and none writes into ~/.cache.
"""

import pytest

from lifelong.training.devices import Accelerator, accelerator_scope
from lifelong.training.loop import set_torch_threads

set_torch_threads(1)


@pytest.fixture(autouse=True)
def _cpu_fp32_unless_chosen():
    with accelerator_scope(Accelerator(device="cpu")):
        yield


@pytest.fixture(autouse=True)
def _own_feature_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("LIFELONG_CACHE", str(tmp_path_factory.mktemp("lifelong-cache")))
