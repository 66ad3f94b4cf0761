#!/usr/bin/env bash
# Install the emoji artwork cog-mini renders (lifelong.data.sources.emoji_art); safe to run again.
#   Debian: fonts-noto-color-emoji, fonts-symbola, libcairo2 (and npm if it is missing); uses sudo unless root.
#   npm:    emoji-datasource-twitter (Twemoji, CC-BY 4.0) and openmoji (CC-BY-SA 4.0), pinned, into
#           $LIFELONG_EMOJI_DIR (default ${XDG_CACHE_HOME:-~/.cache}/lifelong/emoji), where cog-mini looks.
#   PyPI:   cairosvg, into $PYTHON (default: the project's .venv/bin/python).
# Run it as yourself (not with sudo), so that the npm packages land in your own cache folder.
set -euo pipefail
cd "$(dirname "$0")/.."

TWEMOJI_VERSION=16.0.0
OPENMOJI_VERSION=17.0.0
EMOJI_DIR="${LIFELONG_EMOJI_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lifelong/emoji}"
PYTHON="${PYTHON:-.venv/bin/python}"

debian_packages="fonts-noto-color-emoji fonts-symbola libcairo2"
command -v npm >/dev/null 2>&1 || debian_packages="$debian_packages npm"
if ! dpkg -s $debian_packages >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then as_root=""; else as_root="sudo"; fi
  $as_root apt-get update -qq
  $as_root apt-get install -y -qq $debian_packages >/dev/null
fi

installed_version() {  # the version of npm package $1 in $EMOJI_DIR, or nothing
  sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$EMOJI_DIR/node_modules/$1/package.json" 2>/dev/null | head -n 1
}
if [ "$(installed_version emoji-datasource-twitter)" != "$TWEMOJI_VERSION" ] \
  || [ "$(installed_version openmoji)" != "$OPENMOJI_VERSION" ]; then
  mkdir -p "$EMOJI_DIR"
  npm install --prefix "$EMOJI_DIR" --no-save --no-audit --no-fund --loglevel=error \
    "emoji-datasource-twitter@$TWEMOJI_VERSION" "openmoji@$OPENMOJI_VERSION"
fi

if ! "$PYTHON" -c "import cairosvg" >/dev/null 2>&1; then
  "$PYTHON" -m pip install -q "cairosvg>=2.7,<3"
fi
echo "cog-mini artwork installed (npm packages in $EMOJI_DIR)"
