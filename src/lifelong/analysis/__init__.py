"""Analyses over streams that are not learners: the transfer matrix (spec/nevis22.md section 3)."""
