"""Lifelong Benchmarks and Sort & Search: the growing samples x models correctness matrix, its store, and estimation."""
