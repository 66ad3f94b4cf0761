#!/usr/bin/env bash
# Install the emoji artwork cog-mini renders; safe to run again. It runs `lifelong cog install-art` (the one place
# of the steps: Debian emoji fonts and cairo via apt-get, the pinned npm packages Twemoji and OpenMoji into
# $LIFELONG_EMOJI_DIR, default ${XDG_CACHE_HOME:-~/.cache}/lifelong/emoji, and cairosvg via pip) with the active
# Python: $PYTHON if set, else $VIRTUAL_ENV/bin/python, else python3 on PATH. Arguments pass on (e.g. --dry-run).
# Run it as yourself (not with sudo): it uses sudo for apt-get, and the npm packages land in your own cache folder.
set -euo pipefail

if [ -z "${PYTHON:-}" ]; then
  if [ -n "${VIRTUAL_ENV:-}" ]; then PYTHON="$VIRTUAL_ENV/bin/python"; else PYTHON=python3; fi
fi
if ! "$PYTHON" -c "import lifelong" >/dev/null 2>&1; then
  echo "error: $PYTHON cannot import lifelong: install the toolkit into it first (pip install -e . in the clone)," \
    "or name the interpreter that has it: PYTHON=path/to/python $0" >&2
  exit 2
fi
exec "$PYTHON" -m lifelong cog install-art "$@"
