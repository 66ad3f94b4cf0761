"""Emoji artwork in several independent styles, rendered to RGB arrays on white (the shared emoji source).

Styles (four artwork families; OpenMoji gives two renderings):
- `noto`: Google's Noto Color Emoji (Debian `fonts-noto-color-emoji`); a bitmap font that Pillow draws only at
  size 109 with `embedded_color=True`.
- `symbola`: George Douros's Symbola (Debian `fonts-symbola`); monochrome outlines, drawn black on white.
- `twemoji`: Twitter's Twemoji 64 px PNGs (npm `emoji-datasource-twitter`), composited on white.
- `openmoji`, `openmoji-black`: OpenMoji's colour and black SVGs (npm `openmoji`), rendered with cairosvg.

Licences: Twemoji graphics are CC-BY 4.0 (Twitter, Inc. and other contributors) and OpenMoji graphics are
CC-BY-SA 4.0 (openmoji.org); anything published with images made from them must credit them (and share
OpenMoji-derived images alike). They are read at run time from the installed packages, never shipped here.

Every rendering is cropped to its drawing, centred on a white square with a small margin and resized, so
styles share a scale. Install everything with `lifelong cog install-art` (in a clone: scripts/install-cog-mini.sh).
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from lifelong.core.errors import LifelongError

INSTALL_COMMAND = "lifelong cog install-art"  # what every "not installed" message names (lifelong.commands.cog_install)
INSTALL_SCRIPT = INSTALL_COMMAND  # the older name; scripts/install-cog-mini.sh runs this command
EMOJI_DIR_ENV = "LIFELONG_EMOJI_DIR"
FONT_DIR_ENV = "LIFELONG_EMOJI_FONTS"
STYLES = ("noto", "symbola", "twemoji", "openmoji", "openmoji-black")
FAMILY = {
    "noto": "noto",
    "symbola": "symbola",
    "twemoji": "twemoji",
    "openmoji": "openmoji",
    "openmoji-black": "openmoji",
}
FAMILIES = ("noto", "symbola", "twemoji", "openmoji")
# the families that draw every cog-mini concept, so each can hold a fold's test images (Symbola, a monochrome font,
# lacks 143 of the 568 mapped emoji: it only ever trains)
HOLDOUT_FAMILIES = ("noto", "twemoji", "openmoji")
FONT_FILES = {"noto": ("NotoColorEmoji.ttf",), "symbola": ("Symbola.ttf", "Symbola_hint.ttf", "Symbola.otf")}
FONT_SUBDIRS = ("truetype/noto", "truetype/ancient-scripts", "truetype/symbola", "opentype/symbola", "")
NPM_PACKAGES = {"twemoji": "emoji-datasource-twitter", "openmoji": "openmoji"}
HOW_TO_INSTALL = {  # what is missing, as the "not installed" message names it
    "noto": "Noto Color Emoji (Debian fonts-noto-color-emoji)",
    "symbola": "Symbola (Debian fonts-symbola)",
    "twemoji": "Twemoji (npm emoji-datasource-twitter)",
    "openmoji": "OpenMoji (npm openmoji, PyPI cairosvg)",
}
NOTO_SIZE = 109  # the only size Noto Color Emoji's bitmap strike is drawn at
MARGIN = 0.08  # blank border around the drawing, as a fraction of the side
SVG_PIXELS = 256  # OpenMoji SVGs are rasterised at this side before cropping


def check_style_split(test_style: str, train_styles: tuple[str, ...] | None) -> None:
    """A ValueError unless `test_style` is a family and every train style exists and lies outside that family."""
    if test_style not in FAMILIES:
        raise ValueError(f"test_style {test_style!r} is not a style family; choose among {list(FAMILIES)}")
    for style in train_styles or ():
        if style not in STYLES:
            raise ValueError(f"unknown train style {style!r}; choose among {list(STYLES)}")
        if FAMILY[style] == test_style:
            raise ValueError(f"train style {style!r} is of the test family {test_style!r}; keep them apart")


def style_split(test_style: str, train_styles: tuple[str, ...] | None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(train styles, test styles): the test family's styles are held out; None = every style outside it."""
    train = train_styles or tuple(s for s in STYLES if FAMILY[s] != test_style)
    return tuple(train), tuple(s for s in STYLES if FAMILY[s] == test_style)


def art_cache_key(version: str, table: dict[str, str], options: dict, art: EmojiArt, styles: tuple[str, ...]) -> str:
    """A short hash of everything images built from the artwork depend on: the cache format `version`, the shipped
    tables (`{name: text}`, hashed), the build options and the versions of the styles' artwork."""
    payload = {
        "version": version,
        **{name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in table.items()},
        "options": options,
        "art": {s: art.source_id(s) for s in styles},
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=list).encode()).hexdigest()[:16]


class EmojiArtMissingError(LifelongError, FileNotFoundError):
    """A style's package is not installed where we look."""


class EmojiNotInStyleError(KeyError):
    """The style has no drawing of this emoji."""


def emoji_text(codepoints: str) -> str:
    """The string of a codepoint sequence such as '1F43F-FE0F'."""
    return "".join(chr(int(part, 16)) for part in codepoints.split("-"))


def _base(codepoints: str) -> str:
    """The sequence without variation selector 16 (FE0F), upper case, as OpenMoji names its files."""
    return "-".join(p for p in codepoints.upper().split("-") if p != "FE0F")


def font_dirs() -> list[Path]:
    """Where fonts are looked for: $LIFELONG_EMOJI_FONTS, then the system and user font folders."""
    dirs = [os.environ.get(FONT_DIR_ENV), "/usr/share/fonts", "/usr/local/share/fonts"]
    dirs += [str(Path.home() / ".local/share/fonts"), str(Path.home() / ".fonts")]
    return [Path(d) for d in dirs if d]


def default_emoji_dir() -> Path:
    """Where `lifelong cog install-art` puts the npm packages: $LIFELONG_EMOJI_DIR, else the user's cache folder."""
    if os.environ.get(EMOJI_DIR_ENV):
        return Path(os.environ[EMOJI_DIR_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lifelong" / "emoji"


def emoji_dirs(emoji_dir: str | os.PathLike | None = None) -> list[Path]:
    """Where the npm packages are looked for: `emoji_dir`, $LIFELONG_EMOJI_DIR, the cache folder, npm's globals."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "lifelong" / "emoji"
    dirs = [emoji_dir, os.environ.get(EMOJI_DIR_ENV), cache, Path.cwd()]
    dirs += ["/usr/local/lib/node_modules", "/usr/lib/node_modules"]
    return [Path(d).expanduser() for d in dirs if d]


def find_font(family: str, dirs: list[Path] | None = None) -> Path | None:
    """The font file of `family` ('noto' or 'symbola') in the font folders, or None."""
    for directory in dirs if dirs is not None else font_dirs():
        for sub in FONT_SUBDIRS:
            for name in FONT_FILES[family]:
                if (directory / sub / name).is_file():
                    return directory / sub / name
        if directory.is_dir():
            for name in FONT_FILES[family]:
                found = next(iter(sorted(directory.rglob(name))), None)
                if found is not None:
                    return found
    return None


def find_package(family: str, dirs: list[Path]) -> Path | None:
    """The folder of the npm package of `family` ('twemoji' or 'openmoji'), or None."""
    package = NPM_PACKAGES[family]
    for directory in dirs:
        for candidate in (directory / "node_modules" / package, directory / package):
            if (candidate / "package.json").is_file():
                return candidate
    return None


@functools.lru_cache(maxsize=8)
def _cmap(path: str) -> frozenset[int]:
    from fontTools.ttLib import TTFont  # matplotlib's dependency; read lazily, only the cmap table

    return frozenset(TTFont(path, lazy=True).getBestCmap())


def _square_on_white(rgba: Image.Image, size: int) -> np.ndarray:
    """Crop to the drawing, centre it on a white square with a margin, resize to `size`; uint8 [size, size, 3]."""
    rgba = rgba.convert("RGBA")
    box = rgba.getchannel("A").point(lambda a: 255 if a > 8 else 0).getbbox()
    if box is None:
        raise ValueError("the rendering is blank (no opaque pixel)")
    drawing = rgba.crop(box)
    side = int(round(max(drawing.size) / (1 - 2 * MARGIN)))
    canvas = Image.new("RGBA", (side, side), (255, 255, 255, 255))
    offset = ((side - drawing.width) // 2, (side - drawing.height) // 2)
    canvas.alpha_composite(drawing, offset)
    return np.asarray(canvas.convert("RGB").resize((size, size), Image.Resampling.LANCZOS), dtype=np.uint8)


class EmojiArt:
    """The emoji artwork installed on this machine: found once, rendered per (style, emoji)."""

    def __init__(self, emoji_dir: str | os.PathLike | None = None, fonts: list[Path] | None = None) -> None:
        searched = emoji_dirs(emoji_dir)
        self._searched = {"fonts": fonts if fonts is not None else font_dirs(), "npm": searched}
        self.sources: dict[str, Path | None] = {
            "noto": find_font("noto", self._searched["fonts"]),
            "symbola": find_font("symbola", self._searched["fonts"]),
            "twemoji": find_package("twemoji", searched),
            "openmoji": find_package("openmoji", searched),
        }

    def available(self, style: str) -> bool:
        """Whether the package of `style` is installed (OpenMoji also needs cairosvg)."""
        family = FAMILY[_check_style(style)]
        if self.sources[family] is None:
            return False
        if family == "openmoji":
            try:
                import cairosvg  # noqa: F401
            except (ImportError, OSError):
                return False
        return True

    def missing(self, styles=STYLES) -> list[str]:
        """The styles among `styles` whose package is not installed."""
        return [s for s in styles if not self.available(s)]

    def require(self, styles=STYLES, what: str = "the emoji source") -> None:
        """Raise EmojiArtMissingError, in a few CLI words: the artwork `what` (e.g. "facts-mini") lacks and the one
        command that installs it."""
        missing = self.missing(styles)
        if not missing:
            return
        families = sorted({FAMILY[s] for s in missing})
        raise EmojiArtMissingError(
            f"{what} draws emoji artwork that is not installed here: {'; '.join(HOW_TO_INSTALL[f] for f in families)}."
            f" Install it with `{INSTALL_COMMAND}` (or point ${EMOJI_DIR_ENV} at the npm packages)"
        )

    def source_id(self, style: str) -> str:
        """A string that changes when the installed artwork of `style` changes (for cache keys)."""
        self.require([style])
        path = self.sources[FAMILY[style]]
        assert path is not None
        if path.is_file():
            return f"{path.name}:{path.stat().st_size}"
        version = json.loads((path / "package.json").read_text(encoding="utf-8")).get("version", "?")
        return f"{path.name}@{version}"

    def _file(self, style: str, codepoints: str) -> Path | None:
        family = FAMILY[style]
        root = self.sources[family]
        assert root is not None
        if family == "twemoji":
            names = (codepoints.lower(), _base(codepoints).lower())
            paths = [root / "img" / "twitter" / "64" / f"{n}.png" for n in names]
        else:
            colour = "black" if style == "openmoji-black" else "color"
            paths = [root / colour / "svg" / f"{n}.svg" for n in (_base(codepoints), codepoints.upper())]
        return next((p for p in paths if p.is_file()), None)

    def has(self, style: str, codepoints: str) -> bool:
        """Whether `style` is installed and draws the emoji `codepoints` (e.g. '1F34E')."""
        if not self.available(style):
            return False
        if FAMILY[style] in FONT_FILES:
            return all(ord(c) in _cmap(str(self.sources[FAMILY[style]])) for c in emoji_text(_base(codepoints)))
        return self._file(style, codepoints) is not None

    def render(self, style: str, codepoints: str, size: int = 96) -> np.ndarray:
        """The emoji `codepoints` drawn in `style`: uint8 [size, size, 3] on white."""
        self.require([_check_style(style)])
        if not self.has(style, codepoints):
            raise EmojiNotInStyleError(f"style {style!r} has no drawing of emoji {codepoints}; check with has()")
        if size < 8:
            raise ValueError(f"size is {size}; give a side of at least 8 pixels")
        family = FAMILY[style]
        if family == "noto":
            rgba = _draw_font(str(self.sources["noto"]), NOTO_SIZE, emoji_text(_base(codepoints)), colour=True)
        elif family == "symbola":
            rgba = _draw_font(str(self.sources["symbola"]), 128, emoji_text(_base(codepoints)), colour=False)
        elif family == "twemoji":
            rgba = Image.open(self._file(style, codepoints)).convert("RGBA")
        else:
            import cairosvg

            path = str(self._file(style, codepoints))
            png = cairosvg.svg2png(url=path, output_width=SVG_PIXELS, output_height=SVG_PIXELS)
            rgba = Image.open(io.BytesIO(png)).convert("RGBA")
        return _square_on_white(rgba, size)


def _check_style(style: str) -> str:
    if style not in FAMILY:
        raise ValueError(f"unknown emoji style {style!r}; choose among {list(STYLES)}")
    return style


@functools.lru_cache(maxsize=4)
def _font(path: str, size: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(path, size)


def _draw_font(path: str, size: int, text: str, colour: bool) -> Image.Image:
    """`text` drawn with the font at `path` on a transparent canvas (colour bitmaps, or black outlines)."""
    font = _font(path, size)
    left, top, right, bottom = font.getbbox(text)
    canvas = Image.new("RGBA", (right - left + 4, bottom - top + 4), (255, 255, 255, 0))
    draw = ImageDraw.Draw(canvas)
    if colour:
        draw.text((2 - left, 2 - top), text, font=font, embedded_color=True)
    else:
        draw.text((2 - left, 2 - top), text, font=font, fill=(0, 0, 0, 255))
    return canvas
