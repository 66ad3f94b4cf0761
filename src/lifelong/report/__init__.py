"""Reports of runs: plots (and the HTML report)."""
