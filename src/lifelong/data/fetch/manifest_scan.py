"""Reading a manifest file safely: bytes capped, UTF-8 checked, then a linear pre-scan before tomllib parses it.

tomllib recurses once per level of nesting (50,000 levels end in a RecursionError) and its time and memory grow
with the square of a dotted key's parts (a 50,000-part key took 4 GB). `scan` reads the text once, token by
token, knowing TOML's strings (basic, literal, multi-line) and comments well enough that a bracket, a dot or a
'#' inside them does not count, and refuses nesting, key parts and lengths past limits no real manifest nears
(the package's: nesting 3, key parts 3, strings under 2,000 characters). A float (1.5) or a date is a value, so
its dots are not key parts.
"""

from __future__ import annotations

import re
from pathlib import Path

from lifelong.core.errors import DataError

MAX_BYTES = 4 * 1024 * 1024  # the package's manifest is ~300 KB; tomllib takes ~5 s on 8 MB of small tokens
MAX_DEPTH = 32  # arrays and inline tables inside each other
MAX_KEY_PARTS = 16  # parts of one dotted key or table header (a.b.c is 3)
MAX_KEY_CHARS = 256  # one part of a key, quotes included
MAX_STRING_CHARS = 65_536  # one string value, quotes included
MAX_BARE_CHARS = 256  # one number, date or boolean

_TOKEN = re.compile(
    r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*+"{3,5}'  # multi-line basic string (up to two quotes end its content)
    r"|'''(?:[^']|'(?!''))*+'{3,5}"  # multi-line literal string
    r'|"(?:[^"\\\n]|\\.)*+"'  # basic string
    r"|'[^'\n]*+'"  # literal string
    r"|#[^\n]*+"  # comment
    r"|[\[\]{},=.\n]"  # structure
    r'|[^\s"\'#\[\]{},=.]++'  # a bare key, number, date or boolean
    r"|[\"']"  # a quote that opens no complete string
)


class ManifestError(DataError, ValueError):
    """A manifest that cannot be used: names the file, and the dataset and the field where there is one."""


def read_text(path: Path, origin: str) -> str:
    """The file's text: at most MAX_BYTES, UTF-8 (the error says the byte offset); reads no more than that."""
    with open(path, "rb") as handle:  # a FIFO or /dev/zero must not be read to its end
        data = handle.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ManifestError(
            f"{origin}: more than {MAX_BYTES:,} bytes; a manifest is a few hundred KB (the package's is ~300 KB)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, byte = data.count(b"\n", 0, exc.start) + 1, data[exc.start : exc.start + 1]
        raise ManifestError(
            f"{origin}: not UTF-8: byte {exc.start} (line {line}) is {byte!r} ({exc.reason}); save it as UTF-8"
        ) from None


def _refuse(text: str, at: int, origin: str, what: str) -> ManifestError:
    line = text.count("\n", 0, at) + 1
    return ManifestError(f"{origin}: line {line}: {what}; refused before parsing (see docs/manifests.md)")


def scan(text: str, origin: str) -> None:
    """Refuse text past MAX_BYTES, nesting past MAX_DEPTH, keys past MAX_KEY_PARTS / MAX_KEY_CHARS, long values."""
    if len(text) > MAX_BYTES:
        raise ManifestError(f"{origin}: more than {MAX_BYTES:,} characters; a manifest is a few hundred KB")
    stack: list[str] = []  # open arrays '[' and inline tables '{'
    expect = "key"  # "key" (a statement's or an inline table's), "value", or "end" (a value was read)
    header = ""  # "[" or "[[" while inside a table header
    parts = 0  # parts of the key being read
    opened = -1  # where the table header being read starts
    for match in _TOKEN.finditer(text):
        token, at = match.group(), match.start()
        first = token[0]
        if first == "#":
            continue
        if first == "\n":
            if not stack:
                expect, header, parts = "key", "", 0
        elif first not in "[]{},=.":  # a string or a bare word
            if len(token) == 1 and first in "\"'":
                raise _refuse(text, at, origin, "a string is opened and never closed")
            if header or expect == "key":
                parts += 1
                if parts > MAX_KEY_PARTS:
                    raise _refuse(text, at, origin, f"a key or table header of more than {MAX_KEY_PARTS} dotted parts")
                if len(token) > MAX_KEY_CHARS:
                    raise _refuse(text, at, origin, f"a key part of {len(token):,} characters (limit {MAX_KEY_CHARS})")
            else:
                limit = MAX_STRING_CHARS if first in "\"'" else MAX_BARE_CHARS
                if len(token) > limit:
                    raise _refuse(text, at, origin, f"a value of {len(token):,} characters (limit {limit:,})")
                expect = "end"
        elif first == "=":
            expect, parts = "value", 0
        elif first == "[" and expect == "key" and not stack and not header:
            header, opened, parts = ("[[" if text.startswith("[[", at) else "["), at, 0
        elif first == "[" and header == "[[" and at == opened + 1:
            continue  # the second bracket of [[
        elif first in "[{":
            stack.append(first)
            if len(stack) > MAX_DEPTH:
                raise _refuse(text, at, origin, f"arrays or inline tables nested more than {MAX_DEPTH} deep")
            expect, parts = ("key" if first == "{" else "value"), 0
        elif first == "]" and header:
            if header == "[[" and text.startswith("]]", at):
                header = "["  # the first of the two closing brackets; the next one ends the header
                continue
            header, expect = "", "end"
        elif first in "]}" and stack:
            stack.pop()
            expect = "end"
        elif first == "," and stack:
            expect, parts = ("key" if stack[-1] == "{" else "value"), 0
