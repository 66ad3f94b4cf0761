"""`lifelong cog install-art`: install the emoji artwork cog-mini (and facts-mini) render, as far as the machine allows.

Three steps, each skipped when already done: the Debian packages (the two emoji fonts, libcairo2 for cairosvg, and
npm when it is missing) through apt-get, as root or through sudo; the pinned npm packages (Twemoji, OpenMoji) into
the folder cog-mini reads; cairosvg into the running Python. A step this machine cannot do says what to run by hand.
`scripts/install-cog-mini.sh` (in a clone) runs this command with the active interpreter.

`cog_install_art_plan(spec)` probes the machine and plans the steps; `cog_install_art(spec)` runs them (the
commands' own output goes to this process's standard output and error).
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

from lifelong.core.progress import Progress, progress_bar
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


@dataclass(frozen=True)
class CogInstallArtSpec:
    """`lifelong cog install-art`'s options; `emoji_dir` (not an option): the npm packages' folder (default
    $LIFELONG_EMOJI_DIR, else ~/.cache/lifelong/emoji)."""

    dry_run: bool = False  # plan only; install nothing
    emoji_dir: str | Path | None = None


@dataclass(frozen=True)
class CogInstallArtPlan:
    """The steps for this machine, in order, and whether the process runs under sudo (the npm packages would then go
    to root's cache)."""

    emoji_dir: Path
    steps: list[Step]
    under_sudo: bool


@dataclass(frozen=True)
class CommandRun:
    """One command run: its return code (0: done), or why it could not start."""

    command: tuple[str, ...]
    code: int | str

    @property
    def failed(self) -> bool:
        return self.code != 0


@dataclass
class CogInstallArtResult:
    """The plan, the commands run, the steps not done (by hand, or failed) and the artwork styles still missing."""

    plan: CogInstallArtPlan
    dry_run: bool
    ran: list[CommandRun]
    not_done: list[str]
    missing: list[str]

    @property
    def exit_code(self) -> int:
        """The command's exit status: 0 when the artwork is installed (or on a dry run), else 1."""
        return 1 if self.missing and not self.dry_run else 0


def cog_install_art_plan(spec: CogInstallArtSpec) -> CogInstallArtPlan:
    """Probe this machine and plan the three steps (see the module doc); installs nothing."""
    emoji_dir = Path(spec.emoji_dir) if spec.emoji_dir is not None else default_emoji_dir()
    steps = plan_install(emoji_dir, Machine.probe(emoji_dir))
    return CogInstallArtPlan(emoji_dir, steps, bool(os.environ.get("SUDO_USER")) and not spec.dry_run)


def cog_install_art(
    spec: CogInstallArtSpec, *, plan: CogInstallArtPlan | None = None, progress: Progress = False
) -> CogInstallArtResult:
    """Run the steps of `plan` (default: `cog_install_art_plan(spec)`) unless `spec.dry_run`; a step stops at its
    first failing command. `progress` is told of each command before it runs (the description: the command as a
    shell reads it) and after (one more done)."""
    plan = plan if plan is not None else cog_install_art_plan(spec)
    if spec.dry_run:
        return CogInstallArtResult(plan, True, [], [], [])
    ran: list[CommandRun] = []
    not_done = [step.name for step in plan.steps if step.by_hand]
    total = sum(len(step.commands) for step in plan.steps)
    with progress_bar(progress, total) as advance:
        for step in plan.steps:
            for folder in step.before if step.commands else []:
                folder.mkdir(parents=True, exist_ok=True)
            for command in step.commands:
                advance(description=shlex.join(command))
                ran.append(_run(command, quiet=step.quiet))
                advance(1)
                if ran[-1].failed:
                    not_done.append(step.name)
                    break
    importlib.invalidate_caches()
    return CogInstallArtResult(plan, False, ran, not_done, list(EmojiArt(plan.emoji_dir).missing()))


def _run(command: tuple[str, ...], *, quiet: bool) -> CommandRun:
    """Run `command` (its standard output hidden when `quiet`): its return code, or the reason it could not start."""
    try:
        code: int | str = subprocess.run(command, stdout=subprocess.DEVNULL if quiet else None, check=False).returncode
    except OSError as exc:
        code = f"{exc.strerror}"
    return CommandRun(command, code)
