"""lifelong: lifelong benchmarking of visual learners and models."""

__version__ = "0.1.0"
