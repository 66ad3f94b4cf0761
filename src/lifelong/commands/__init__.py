"""The command layer: what the `lifelong` CLI does, as functions (run wiring, console output, file writing)."""
