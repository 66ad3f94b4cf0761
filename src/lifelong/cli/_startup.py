"""What the `lifelong` command does before anything loads numpy or torch: portable mode (LIFELONG_PORTABLE=1, or
`run --portable`) sets the variables those libraries read as they load (lifelong.commands.portable).

lifelong.cli imports this module first, for that effect; typer parses `--portable` later, when numpy has loaded.
"""

from __future__ import annotations

import sys

from lifelong.commands.portable import enable_early

enable_early(sys.argv[1:])
