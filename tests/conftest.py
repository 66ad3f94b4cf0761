"""Test-wide settings: one torch thread per process (runs are reproducible per thread count, and two
threads spin against each other on a loaded 2-core machine)."""

from lifelong.training.loop import set_torch_threads

set_torch_threads(1)
