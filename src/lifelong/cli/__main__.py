"""`python -m lifelong.cli ...`: the `lifelong` command with this interpreter."""

from lifelong.cli import main

main()
