"""`python -m lifelong ...`: the `lifelong` command with this interpreter (scripts/install-cog-mini.sh uses it)."""

from lifelong.cli import main

main()
