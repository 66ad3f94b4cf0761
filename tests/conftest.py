"""Test-wide settings: one torch thread per process (runs are reproducible per thread count, and two
threads spin against each other on a loaded 2-core machine)."""

import os

os.environ.setdefault("LIFELONG_TORCH_THREADS", "1")
