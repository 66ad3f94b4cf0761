"""WordNet 3.0 offline: find Debian's files, lay them out once the way nltk reads them, and open nltk's reader.

Debian's `wordnet-base` installs the database under /usr/share/wordnet but not the `lexnames` file nltk needs
(its rows are in the `lexnames(5WN)` man page), and nltk wants a `corpora/wordnet` folder of real files. The
layout is built once into a cache folder (temp folder + rename) keyed by the source folder.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import re
import shutil
import tempfile
import warnings
from pathlib import Path

from lifelong.core.errors import LifelongError

DEBIAN_PACKAGES = "wordnet-base (and wordnet-sense-index)"
DEFAULT_DIRS = ("/usr/share/wordnet", "/usr/local/WordNet-3.0/dict", "/usr/local/share/wordnet")
LEXNAMES_MAN_PAGES = ("/usr/share/man/man5/lexnames.5WN.gz", "/usr/share/man/man5/lexnames.5WN")
REQUIRED = tuple(f"{kind}.{pos}" for kind in ("data", "index") for pos in ("noun", "verb", "adj", "adv")) + tuple(
    f"{pos}.exc" for pos in ("noun", "verb", "adj", "adv")
)
OPTIONAL = ("index.sense", "cntlist.rev")
LAYOUT_VERSION = "1"

# WordNet 3.0's 45 lexicographer files, as listed in lexnames(5WN); used when the man page is not installed
# (container images often drop man pages).
_LEXNAMES = (
    "adj.all adj.pert adv.all noun.Tops noun.act noun.animal noun.artifact noun.attribute noun.body "
    "noun.cognition noun.communication noun.event noun.feeling noun.food noun.group noun.location noun.motive "
    "noun.object noun.person noun.phenomenon noun.plant noun.possession noun.process noun.quantity "
    "noun.relation noun.shape noun.state noun.substance noun.time verb.body verb.change verb.cognition "
    "verb.communication verb.competition verb.consumption verb.contact verb.creation verb.emotion verb.motion "
    "verb.perception verb.possession verb.social verb.stative verb.weather adj.ppl"
).split()
_CATEGORY = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}


class WordNetNotFoundError(LifelongError, FileNotFoundError):
    """WordNet 3.0 is not installed where we look, or a folder given lacks its files."""


def find_wordnet(directory: str | os.PathLike | None = None) -> Path:
    """The folder holding WordNet 3.0's database files: `directory`, else $WNSEARCHDIR, else Debian's place."""
    if directory is not None:
        path = Path(directory)
        missing = [name for name in REQUIRED if not (path / name).is_file()]
        if missing:
            raise WordNetNotFoundError(
                f"{path} is not a WordNet 3.0 database folder (lacks {', '.join(missing)}); "
                f"give the folder holding data.noun, or install the Debian package {DEBIAN_PACKAGES}"
            )
        return path
    candidates = [os.environ.get("WNSEARCHDIR"), *DEFAULT_DIRS]
    for candidate in candidates:
        if candidate and all((Path(candidate) / name).is_file() for name in REQUIRED):
            return Path(candidate)
    raise WordNetNotFoundError(
        f"WordNet 3.0 not found (looked in {', '.join(c for c in candidates if c)}); install it with "
        f"`apt-get install wordnet-base wordnet-sense-index`, or pass --wordnet DIR (a folder holding data.noun)"
    )


def cache_root() -> Path:
    """Where the nltk layout is built: $LIFELONG_WORDNET_CACHE, else $XDG_CACHE_HOME or ~/.cache, /lifelong/wordnet."""
    if os.environ.get("LIFELONG_WORDNET_CACHE"):
        return Path(os.environ["LIFELONG_WORDNET_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lifelong" / "wordnet"


def lexnames_text() -> str:
    """The `lexnames` file (number, name, syntactic category per line), from the man page when it is there."""
    names = _LEXNAMES
    for page in LEXNAMES_MAN_PAGES:
        if Path(page).is_file():
            raw = Path(page).read_bytes()
            text = (gzip.decompress(raw) if page.endswith(".gz") else raw).decode("utf-8", "replace")
            rows = re.findall(r"^(\d\d)\t([a-z]+\.[A-Za-z]+)\s*\t", text, flags=re.MULTILINE)
            if [int(n) for n, _ in rows] == list(range(len(rows))) and len(rows) == len(_LEXNAMES):
                names = [name for _, name in rows]
            break
    return "".join(f"{i:02d}\t{name}\t{_CATEGORY[name.split('.')[0]]}\n" for i, name in enumerate(names))


def _source_key(source: Path) -> str:
    """A short hash of the source folder and its files' sizes and times: a changed source gets a new layout."""
    digest = hashlib.sha256(f"{LAYOUT_VERSION}:{source.resolve()}".encode())
    for name in (*REQUIRED, *OPTIONAL):
        path = source / name
        if path.is_file():
            stat = path.stat()
            digest.update(f"{name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return digest.hexdigest()[:12]


def nltk_layout(source: Path, cache: Path | None = None) -> Path:
    """`<cache>/<key>/corpora/wordnet` holding copies of the source files plus `lexnames`; built once, atomically."""
    home = (cache or cache_root()) / _source_key(source)
    target = home / "corpora" / "wordnet"
    if (target / "lexnames").is_file():
        return target
    home.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{home.name}.", dir=home.parent))
    try:
        folder = work / "corpora" / "wordnet"
        folder.mkdir(parents=True)
        for name in (*REQUIRED, *OPTIONAL):
            if (source / name).is_file():
                shutil.copyfile(source / name, folder / name)  # copies: nltk refuses links leaving its root
        (folder / "lexnames").write_text(lexnames_text())
        try:
            os.rename(work, home)
        except OSError:  # another process finished first: use its layout
            if not (target / "lexnames").is_file():
                raise
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return target


@functools.lru_cache(maxsize=4)
def _open_reader(folder: str):
    import nltk
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    home = str(Path(folder).parent.parent)  # nltk opens files only under a folder on its data path
    if home not in nltk.data.path:
        nltk.data.path.insert(0, home)

    class EnglishWordNet(WordNetCorpusReader):
        def map_wn(self, version: str = "wordnet") -> None:
            return None  # the mapping to other WordNet versions serves multilingual data only (and reads 7 s)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions are not available": we need English only
        return EnglishWordNet(folder, None)


def open_wordnet(directory: str | os.PathLike | None = None, cache: Path | None = None):
    """nltk's WordNet 3.0 reader over the local files (one reader per folder and process)."""
    reader = _open_reader(str(nltk_layout(find_wordnet(directory), cache)))
    version = reader.get_version()
    if version != "3.0":
        raise WordNetNotFoundError(f"{directory or 'the WordNet found'} is WordNet {version}; ImageNet needs 3.0")
    return reader
