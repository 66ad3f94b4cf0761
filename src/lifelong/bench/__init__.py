"""Lifelong benchmarks: the growing samples x models correctness matrix, Sort & Search, insertion and metrics."""
