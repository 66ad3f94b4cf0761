"""`lifelong cog install-art`: install the emoji artwork cog-mini (and facts-mini) render, as far as the machine allows.

Three steps, each skipped when already done: the Debian packages (the two emoji fonts, libcairo2 for cairosvg, and
npm when it is missing) through apt-get, as root or through sudo; the pinned npm packages (Twemoji, OpenMoji) into
the folder cog-mini reads; cairosvg into the running Python. A step this machine cannot do is printed with what to
run by hand. `scripts/install-cog-mini.sh` (in a clone) runs this command with the active interpreter.
"""

from __future__ import annotations

import importlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from lifelong.commands.terminal import console, error_console, note
from lifelong.data.sources.emoji_art import FONT_DIR_ENV, NPM_PACKAGES, EmojiArt, default_emoji_dir, find_font

DEBIAN_PACKAGES = ("fonts-noto-color-emoji", "fonts-symbola", "libcairo2")
NPM_VERSIONS = {NPM_PACKAGES["twemoji"]: "16.0.0", NPM_PACKAGES["openmoji"]: "17.0.0"}  # pinned: the cache key
CAIROSVG = "cairosvg>=2.7,<3"


@dataclass(frozen=True)
class Step:
    """One install step: the commands to run, or why nothing is needed (`done`), or what to run by hand."""

    name: str
    commands: tuple[tuple[str, ...], ...] = ()
    done: str | None = None
    by_hand: str | None = None
    quiet: bool = False  # hide the commands' standard output (apt-get's)
    before: list[Path] = field(default_factory=list)  # folders to create first


@dataclass(frozen=True)
class Machine:
    """What the plan depends on, probed once: tools on PATH, root, installed packages and versions."""

    root: bool
    apt: bool
    sudo: bool
    npm: bool
    dpkg: bool
    missing_debian: tuple[str, ...]
    fonts_found: bool
    npm_versions: dict[str, str | None]
    cairosvg: bool
    pip: bool

    @classmethod
    def probe(cls, emoji_dir: Path) -> Machine:
        dpkg = shutil.which("dpkg") is not None
        missing = tuple(p for p in DEBIAN_PACKAGES if not _dpkg_has(p)) if dpkg else DEBIAN_PACKAGES
        return cls(
            root=hasattr(os, "geteuid") and os.geteuid() == 0,
            apt=shutil.which("apt-get") is not None,
            sudo=shutil.which("sudo") is not None,
            npm=shutil.which("npm") is not None,
            dpkg=dpkg,
            missing_debian=missing,
            fonts_found=find_font("noto") is not None and find_font("symbola") is not None,
            npm_versions={package: _npm_version(emoji_dir, package) for package in NPM_VERSIONS},
            cairosvg=_imports("cairosvg"),
            pip=importlib.util.find_spec("pip") is not None,
        )


def _dpkg_has(package: str) -> bool:
    done = subprocess.run(["dpkg", "-s", package], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return done.returncode == 0


def _npm_version(emoji_dir: Path, package: str) -> str | None:
    try:
        return json.loads((emoji_dir / "node_modules" / package / "package.json").read_text("utf-8")).get("version")
    except (OSError, ValueError):
        return None


def _imports(module: str) -> bool:
    try:
        importlib.import_module(module)
    except (ImportError, OSError):  # cairosvg raises OSError when libcairo is missing
        return False
    return True


def plan_install(emoji_dir: Path, machine: Machine, python: str = sys.executable) -> list[Step]:
    """The three steps for this machine, in order (see the module doc)."""
    steps = [_debian_step(machine)]
    npm_coming = machine.npm or (steps[0].commands and "npm" in steps[0].commands[-1])
    steps.append(_npm_step(emoji_dir, machine, bool(npm_coming)))
    steps.append(_pip_step(machine, python))
    return steps


def _debian_step(machine: Machine) -> Step:
    name = "Debian packages (emoji fonts, cairo, npm)"
    wanted = list(machine.missing_debian) + ([] if machine.npm else ["npm"])
    if machine.dpkg and not wanted:
        return Step(name, done=f"installed: {' '.join(DEBIAN_PACKAGES)}")
    if not machine.apt:
        if machine.fonts_found and machine.npm:
            return Step(name, done="no apt-get here, but both emoji fonts and npm are found")
        return Step(
            name,
            by_hand="this machine has no apt-get: install the Noto Color Emoji and Symbola fonts, cairo and npm with "
            f"its package manager (or point ${FONT_DIR_ENV} at a folder holding NotoColorEmoji.ttf and Symbola.ttf)",
        )
    prefix: tuple[str, ...] = () if machine.root else ("sudo",)
    commands = (
        (*prefix, "apt-get", "update", "-qq"),
        (*prefix, "apt-get", "install", "-y", "-qq", *wanted),
    )
    if not machine.root and not machine.sudo:
        return Step(name, by_hand="not root and no sudo: as root, run " + "; ".join(shlex.join(c) for c in commands))
    return Step(name, commands=commands, quiet=True)


def _npm_step(emoji_dir: Path, machine: Machine, npm_coming: bool) -> Step:
    name = f"npm packages ({', '.join(NPM_VERSIONS)})"
    if all(machine.npm_versions[p] == v for p, v in NPM_VERSIONS.items()):
        return Step(name, done=f"installed in {emoji_dir}")
    command = ("npm", "install", "--prefix", str(emoji_dir), "--no-save", "--no-audit", "--no-fund", "--loglevel=error")
    command += tuple(f"{package}@{version}" for package, version in NPM_VERSIONS.items())
    if not npm_coming:
        return Step(name, by_hand=f"npm is not installed: install it (Node.js), then run {shlex.join(command)}")
    return Step(name, commands=(command,), before=[emoji_dir])


def _pip_step(machine: Machine, python: str) -> Step:
    name = "cairosvg (renders OpenMoji's SVGs)"
    if machine.cairosvg:
        return Step(name, done=f"importable by {python}")
    command = (python, "-m", "pip", "install", "-q", CAIROSVG)
    if not machine.pip:
        return Step(name, by_hand=f"{python} has no pip: install {CAIROSVG!r} into it (e.g. uv pip install)")
    return Step(name, commands=(command,))


def print_plan(steps: list[Step]) -> None:
    """Each step and its commands (or why none), as a user would type them."""
    for number, step in enumerate(steps, start=1):
        if step.done:
            console.print(f"{number}. {escape(step.name)}: nothing to do ({escape(step.done)})", soft_wrap=True)
        elif step.by_hand:
            console.print(f"{number}. {escape(step.name)}: by hand: {escape(step.by_hand)}", soft_wrap=True)
        else:
            console.print(f"{number}. {escape(step.name)}:")
            for command in step.commands:
                console.print(f"   {escape(shlex.join(command))}", soft_wrap=True)


def install_art(emoji_dir: Path | None = None, *, dry_run: bool = False) -> int:
    """Plan the steps, print them, and (unless `dry_run`) run them; 0 when the artwork is installed, else 1."""
    emoji_dir = Path(emoji_dir) if emoji_dir is not None else default_emoji_dir()
    if os.environ.get("SUDO_USER") and not dry_run:
        note("running under sudo: the npm packages go to root's cache; run it as yourself (it uses sudo itself)")
    steps = plan_install(emoji_dir, Machine.probe(emoji_dir))
    print_plan(steps)
    if dry_run:
        console.print("dry run: nothing was installed")
        return 0
    failed = [step.name for step in steps if step.by_hand]
    for step in steps:
        if not step.commands:
            continue
        for folder in step.before:
            folder.mkdir(parents=True, exist_ok=True)
        for command in step.commands:
            console.print(f"$ {escape(shlex.join(command))}", soft_wrap=True)
            output = subprocess.DEVNULL if step.quiet else None
            try:
                code = subprocess.run(command, stdout=output, check=False).returncode
            except OSError as exc:
                code = f"{exc.strerror}"
            if code != 0:
                error_console.print(
                    f"[red]error:[/] {escape(shlex.join(command))} failed ({code}); run it by hand", soft_wrap=True
                )
                failed.append(step.name)
                break
    importlib.invalidate_caches()
    missing = EmojiArt(emoji_dir).missing()
    if missing:
        error_console.print(
            f"[red]error:[/] emoji style(s) {', '.join(missing)} still missing"
            + (f" (steps not done: {'; '.join(failed)})" if failed else ""),
            soft_wrap=True,
        )
        return 1
    console.print(f"cog-mini artwork installed (npm packages in {escape(str(emoji_dir))})", soft_wrap=True)
    return 0
