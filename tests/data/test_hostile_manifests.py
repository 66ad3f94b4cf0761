"""Hostile manifests end in a ManifestError naming the file (bounded time and memory); digests per copy.

The attacks run at full size in a child process under a memory limit and a timeout, so code that regresses to
tomllib's recursion or its quadratic dotted keys fails the test instead of taking the machine's memory.
"""

from __future__ import annotations

import json
import re
import resource
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
from fetch_fixtures import digest
from loopback import Loopback, Route
from typer.testing import CliRunner

from lifelong.cli import app
from lifelong.data.fetch import FetchRequest, fetch, load_manifest, read_provenance
from lifelong.data.fetch.install import STAGING
from lifelong.data.fetch.manifest import Artefact, Copy, ManifestError, check_file_name, parse_manifest
from lifelong.data.fetch.manifest_scan import MAX_DEPTH, MAX_KEY_PARTS, scan
from lifelong.data.fetch.verify import ChecksumError, verify_artefact

N = 50_000
A, B = b"the origin's bytes", b"the mirror's bytes, recompressed"
URL_A, URL_B = "https://origin.example.org/d.bin", "https://mirror.example.org/files/42"

ATTACKS = {
    "arrays 50,000 deep": ("a = " + "[" * N + "]" * N + "\n", "nested more than 32 deep"),
    "inline tables 50,000 deep": ("a = " + "{b = " * N + "1" + "}" * N + "\n", "nested more than 32 deep"),
    "a 50,000-part dotted key": ("a." * (N - 1) + "a = 1\n", "more than 16 dotted parts"),
    "a 50,000-part table header": ("[" + "a." * (N - 1) + "a]\n", "more than 16 dotted parts"),
    "a 100,000-digit number": ("a = 1" + "0" * 100_000 + "\n", "a value of 100,001 characters"),
    "a string never closed": ('a = "' + "x" * 1000 + "\n", "never closed"),
    "not UTF-8": (b'[[dataset]]\nname = "caf\xe9"\n', "not UTF-8: byte 23 \\(line 2\\)"),
    "a 20 MB file": (b"# padding\n" * 2_000_000, "more than 4,194,304 bytes"),
    "a name ending in a newline": (
        '[[dataset]]\nname = "evil\\n"\nconverter = "copy"\naccess = "manual"\n[[dataset.artefacts]]\nfile = "a"\n',
        "dataset name 'evil\\\\n'",
    ),
    "a control character in a file name": (
        '[[dataset]]\nname = "ok"\nconverter = "copy"\naccess = "manual"\n'
        '[[dataset.artefacts]]\nfile = "a\\u001b[2Jb.bin"\n',
        "dataset 'ok': artefact file 'a\\\\x1b\\[2Jb.bin' holds a control character",
    ),
}

CHILD = """
import json, sys
from lifelong.data.fetch.manifest import ManifestError, load_manifest
try:
    load_manifest([sys.argv[1]])
    print(json.dumps({"error": None}))
except ManifestError as exc:
    print(json.dumps({"error": "ManifestError", "message": str(exc)}))
except BaseException as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)[:300]}))
"""


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (3 * 1024**3, 3 * 1024**3))  # the old code took 4 GB on one attack


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_hostile_manifest_file_ends_in_a_manifest_error_naming_it(tmp_path, attack):
    content, message = ATTACKS[attack]
    path = tmp_path / "lab.toml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True, timeout=120,
        preexec_fn=_limit_memory,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] == "ManifestError", result
    assert result["message"].startswith(str(path)), result
    assert re.search(message, result["message"]), result


VALID = "\n".join(
    [
        "# a comment with [brackets], {braces}, \"quotes\", 'quotes' and dots: a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s",
        'title = "brackets [[[[ and dots a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s # not a comment"',
        r"path = 'C:\Users\[lab]\a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q'",
        'poem = """',
        'ends in two quotes: [[[[{{{{ a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r ""\'\'\'"""""',
        "raw = '''",
        "[[[[ a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r '' '''''",
        r'escaped = "a \" [[[[ \\"',
        "floats = [1.5, 2.25, -0.5e3, 6.02e23, inf, nan]",
        "dates = [1979-05-27T07:32:00Z, 1979-05-27 07:32:00.999999-07:00, 07:32:00, 1979-05-27]",
        '"quoted.key.with.dots.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q" = 1',
        '3.14159 = "pi"',
        'site."google.com".a.b = true',
        "inline = { a.b = 1, c = [1.5, { d.e = 2 }] }",
        "[[dataset]]",
        'name = "x"',
        '[dataset."a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r".c]',
        "k = 1",
        "[[dataset.artefacts]]",
        "[[dataset.artefacts.copies]]",
        'url = "https://e/x"',
        "",
    ]
)


def test_the_pre_scan_passes_valid_toml_whose_strings_and_comments_hold_brackets_and_dots():
    scan(VALID, "valid.toml")
    data = tomllib.loads(VALID)
    assert data["poem"].endswith('""\'\'\'""') and data["raw"].endswith("'' ''") and data["3"] == {"14159": "pi"}
    many_floats = "x = [" + ", ".join(f"{i}.5" for i in range(20_000)) + "]\n"  # dots on one line: values
    scan(many_floats, "floats.toml")
    many_dates = "x = [" + ", ".join("1979-05-27T07:32:00.5Z" for _ in range(5_000)) + "]\n"
    scan(many_dates, "dates.toml")


def test_the_limits_are_exact():
    deep = MAX_DEPTH
    scan("a = " + "[" * deep + "]" * deep + "\n", "ok.toml")
    scan(".".join("k" * MAX_KEY_PARTS) + " = 1\n[" + ".".join("t" * MAX_KEY_PARTS) + "]\n", "ok.toml")
    scan("[[" + ".".join("t" * MAX_KEY_PARTS) + "]]\n", "ok.toml")
    with pytest.raises(ManifestError, match="nested more than"):
        scan("a = " + "[" * (deep + 1) + "]" * (deep + 1) + "\n", "bad.toml")
    with pytest.raises(ManifestError, match="line 3: a key or table header of more than"):
        scan("a = 1\n\n[[" + ".".join("t" * (MAX_KEY_PARTS + 1)) + "]]\n", "bad.toml")
    with pytest.raises(ManifestError, match="nested more than"):  # a newline after '=' hides no header
        scan("a =\n" + "[" * 40, "bad.toml")


def _toml(value: object) -> str:
    if isinstance(value, str):
        return json.dumps(value)  # JSON's string escapes are TOML's
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def entry_toml(artefacts=None, licence=None, **fields) -> str:
    """One [[dataset]] in TOML; strings escaped as JSON does (control characters as \\uXXXX)."""
    row = {"name": "toy", "title": "Toy", "access": "auto", "converter": "copy", **fields}
    lines = ["[[dataset]]", *(f"{k} = {_toml(v)}" for k, v in row.items())]
    if licence is not None:
        lines += ["[dataset.licence]", *(f"{k} = {_toml(v)}" for k, v in licence.items())]
    for artefact in [art()] if artefacts is None else artefacts:
        lines += ["[[dataset.artefacts]]", *(f"{k} = {_toml(v)}" for k, v in artefact.items() if k != "copies")]
        for copy in artefact.get("copies", []):
            lines += ["[[dataset.artefacts.copies]]", *(f"{k} = {_toml(v)}" for k, v in copy.items())]
    return "\n".join(lines) + "\n"


def art(**fields) -> dict:
    return {"file": "a.bin", "urls": ["https://e.org/a.bin"], "sha256": "0" * 64, **fields}


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"name": "toy\n"}, "dataset name 'toy\\\\n'"),
        ({"name": "-toy"}, "dataset name '-toy'"),
        ({"name": "t" * 101}, "at most 100"),
        ({"title": "Toy\x1b[31m"}, "dataset 'toy': title 'Toy\\\\x1b\\[31m' holds the control character"),
        ({"title": "Toy \u202eevil"}, "dataset 'toy': title .* holds the control character"),
        ({"homepage": "https://e.org/\r"}, "dataset 'toy': homepage"),
        ({"manual": "Download it\x07"}, "dataset 'toy': manual"),
        ({"streams": "lab"}, "dataset 'toy': streams must be a list"),
        ({"streams": ["lab\n"]}, "dataset 'toy': stream 'lab\\\\n'"),
        ({"streams": ["-lab"]}, "dataset 'toy': stream '-lab'"),
        ({"converter": ["copy"]}, "dataset 'toy': converter \\['copy'\\] must be one of"),
        ({"converter": "copy\n"}, "dataset 'toy': converter 'copy\\\\n' must be one of"),
        ({"access": "auto\n"}, "dataset 'toy': access"),
        ({"access": "kaggle", "kaggle": "--owner/x"}, "dataset 'toy': kaggle '--owner/x' must be 'owner/dataset'"),
        ({"access": "kaggle", "kaggle": "owner/x\n"}, "dataset 'toy': kaggle 'owner/x\\\\n' holds"),
        ({"unpacked_size": "1GB"}, "dataset 'toy': unpacked_size must be a whole number of bytes, got '1GB'"),
        ({"unpacked_size": -1}, "dataset 'toy': unpacked_size must be a whole number"),
        ({"unpacked_size": True}, "dataset 'toy': unpacked_size must be a whole number"),
        ({"unpacked_size": 1.5}, "dataset 'toy': unpacked_size must be a whole number"),
        ({"licence": {"requires_acceptance": "no"}}, "dataset 'toy': licence requires_acceptance must be true or"),
        ({"licence": {"terms": "ok\x1b]0;title\x07"}}, "dataset 'toy': licence terms"),
    ],
)
def test_a_bad_field_is_refused_naming_the_file_the_dataset_and_the_field(fields, message):
    licence = fields.pop("licence", None)
    with pytest.raises(ManifestError, match=message) as caught:
        parse_manifest(entry_toml(licence=licence, **fields), "lab.toml")
    assert str(caught.value).startswith("lab.toml: ")


@pytest.mark.parametrize(
    "file",
    ["a\x1b[2J.bin", "a\n", "a\x85.zip", "a\u202e.zip", "-rf", ".hidden", "..", ".", "a/b", "a\\b", "*.zip",
     "a?.zip", "[ab].zip", "a:b", "a.zip.", "a.zip ", " a.zip", "x" * 256, "é" * 128],
)  # fmt: skip
def test_an_artefact_file_must_be_a_plain_file_name(file):
    assert check_file_name(file) is not None
    with pytest.raises(ManifestError, match="dataset 'toy': artefact file"):
        parse_manifest(entry_toml([art(file=file)]), "lab.toml")


def test_every_package_artefact_file_name_passes_and_ordinary_unicode_titles_do():
    names = [a.file for e in load_manifest().values() for a in e.artefacts]
    assert len(names) > 100 and [n for n in names if check_file_name(n)] == []
    for file in ("CUB_200_2011.tgz", "données d'été (v2).zip", "a b+c=d,e@f~g.tar.gz", "x" * 255):
        assert check_file_name(file) is None, file
    (entry,) = parse_manifest(entry_toml(title="Café – 東京 «faces»"), "lab.toml")
    assert entry.title == "Café – 東京 «faces»"


def test_other_malformed_artefacts_are_refused():
    with pytest.raises(ManifestError, match="lab.toml: dataset 'toy': artefacts must be"):
        parse_manifest(entry_toml([], access="manual", artefacts_=5).replace("artefacts_", "artefacts"), "lab.toml")
    cases = [
        (art(urls=["https://e.org/a.bin\n"]), "URL 'https://e.org/a.bin\\\\n' must start with"),
        (art(urls=5), "urls must be a list"),
        (art(size=True), "size must be a whole number"),
        (art(digests="some"), "digests must be 'all' or 'any'"),
        ({"file": "a.bin", "urls": ["https://e.org/a"], "copies": [{"url": URL_A, "md5": "0" * 32}]}, "in each copy"),
        ({"file": "a.bin", "copies": [{"url": URL_A}]}, f"copy {URL_A} needs a sha256 or md5"),
        ({"file": "a.bin", "copies": [{"url": URL_A, "md5": "0" * 32, "mirror": 1}]}, "a copy has unknown keys"),
        ({"file": "a.bin", "copies": [{"url": URL_A, "md5": "0" * 32}, {"url": URL_A, "md5": "1" * 32}]}, "repeat"),
        ({"file": "a.bin", "copies": [{"url": "file:///etc/passwd", "md5": "0" * 32}]}, "must start with http"),
    ]
    for artefact, message in cases:
        with pytest.raises(ManifestError, match=message) as caught:
            parse_manifest(entry_toml([artefact]), "lab.toml")
        assert str(caught.value).startswith("lab.toml: dataset 'toy': artefact"), caught.value


def test_unpacked_size_and_copies_are_parsed_and_listed():
    copies = [{"url": URL_A, "md5": digest(A, "md5"), "size": len(A)}, {"url": URL_B, "sha256": digest(B)}]
    (entry,) = parse_manifest(entry_toml([{"file": "d.bin", "copies": copies}], unpacked_size=123_456_789), "lab.toml")
    (artefact,) = entry.artefacts
    assert entry.unpacked_size == 123_456_789 and entry.as_json()["unpacked_size"] == 123_456_789
    assert artefact.urls == (URL_A, URL_B) and artefact.size is None  # the second copy's size is unknown
    assert artefact.copies == (Copy(URL_A, md5=digest(A, "md5"), size=len(A)), Copy(URL_B, sha256=digest(B)))
    assert entry.as_json()["artefacts"][0]["copies"][1] == {"url": URL_B, "sha256": digest(B)}
    (plain,) = parse_manifest(entry_toml(), "lab.toml")
    assert plain.unpacked_size is None and plain.as_json()["unpacked_size"] is None


def test_lfw_lists_its_two_hosts_digests_per_copy():
    (artefact,) = load_manifest()["lfw"].artefacts
    assert [c.url.split("/")[2] for c in artefact.copies] == ["vis-www.cs.umass.edu", "ndownloader.figshare.com"]
    assert [tuple(c.expected()) for c in artefact.copies] == [("md5",), ("sha256",)]


COPIES = Artefact(
    "d.bin", (URL_A, URL_B), copies=(Copy(URL_A, md5=digest(A, "md5"), size=len(A)), Copy(URL_B, sha256=digest(B)))
)


def _file(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "d.bin"
    path.write_bytes(data)
    return path


def test_a_file_is_checked_against_the_copy_that_served_it(tmp_path):
    verified = verify_artefact(_file(tmp_path, A), COPIES, served_by=URL_A)
    assert verified.copy == URL_A and verified.check == f"md5 (copy {URL_A})"
    same_url = URL_B.upper().replace("/FILES/42", "/files/42")  # scheme and host compare without case
    assert verify_artefact(_file(tmp_path, B), COPIES, served_by=same_url).copy == URL_B
    with pytest.raises(ChecksumError, match=f"served by {URL_B}\\): expected sha256 {digest(B)} \\(copy {URL_B}\\)"):
        verify_artefact(_file(tmp_path, A), COPIES, served_by=URL_B)  # A's bytes from B's URL
    with pytest.raises(ChecksumError, match=f"has {len(B)} bytes, expected {len(A)}"):
        verify_artefact(_file(tmp_path, B), COPIES, served_by=URL_A)  # A's size alone tells


def test_a_file_of_unknown_source_passes_by_any_one_copy(tmp_path):
    for served_by in (None, "https://lab-mirror.example.org/toy/d.bin"):  # --from, a --mirror, a redirect
        assert verify_artefact(_file(tmp_path, A), COPIES, served_by).copy == URL_A
        assert verify_artefact(_file(tmp_path, B), COPIES, served_by).copy == URL_B
        with pytest.raises(ChecksumError, match=f"copy {URL_A}\\); or sha256 {digest(B)} \\(copy {URL_B}"):
            verify_artefact(_file(tmp_path, b"neither"), COPIES, served_by)
    both = Artefact("d.bin", copies=(Copy(URL_A, sha256=digest(A), md5=digest(B, "md5")),))
    with pytest.raises(ChecksumError):  # one copy's digests must all match
        verify_artefact(_file(tmp_path, A), both)


def test_without_copies_every_listed_digest_must_match_unless_digests_is_any(tmp_path):
    mixed = Artefact("d.bin", (URL_A, URL_B), sha256=digest(B), md5=digest(A, "md5"))
    for data in (A, B):
        with pytest.raises(ChecksumError, match="checksum mismatch for d.bin"):
            verify_artefact(_file(tmp_path, data), mixed, URL_A)
    relaxed = Artefact("d.bin", (URL_A, URL_B), sha256=digest(B), md5=digest(A, "md5"), digests="any")
    assert verify_artefact(_file(tmp_path, A), relaxed).check == "md5"
    assert verify_artefact(_file(tmp_path, B), relaxed, URL_A).check == "sha256"
    with pytest.raises(ChecksumError, match="expected any one of sha256"):
        verify_artefact(_file(tmp_path, b"neither"), relaxed)


def _staged(tmp_path: Path, data: bytes, url: str) -> FetchRequest:
    """A request whose file an earlier run downloaded (from `url`, as its record says); no network is used."""
    copies = [{"url": "http://127.0.0.1:9/a/d.bin", "md5": digest(A, "md5")},
              {"url": "http://127.0.0.1:9/b/d.bin", "sha256": digest(B)}]  # fmt: skip
    text = entry_toml([{"file": "d.bin", "copies": copies}])
    (entry,) = parse_manifest(text, "lab.toml")
    downloads = tmp_path / "root" / STAGING / "downloads" / entry.name
    downloads.mkdir(parents=True)
    (downloads / "d.bin").write_bytes(data)
    (downloads / ".d.bin.source.json").write_text(json.dumps({"url": url, "server_name": None}))
    return FetchRequest(entry, tmp_path / "root")


def test_fetch_checks_a_download_against_the_copy_its_record_names(tmp_path):
    outcome = fetch(_staged(tmp_path / "one", A, "http://127.0.0.1:9/a/d.bin"))
    record = read_provenance(outcome.path)["artefacts"][0]
    assert record["check"] == "md5 (copy http://127.0.0.1:9/a/d.bin)"
    assert (outcome.path / "d.bin").read_bytes() == A
    with pytest.raises(ChecksumError, match="served by http://127.0.0.1:9/b/d.bin"):
        fetch(_staged(tmp_path / "two", A, "http://127.0.0.1:9/b/d.bin"))
    assert not (tmp_path / "two" / "root" / "toy").exists()


def test_fetch_from_a_folder_takes_any_copy(tmp_path):
    (tmp_path / "have").mkdir()
    (tmp_path / "have" / "d.bin").write_bytes(B)
    request = _staged(tmp_path, A, "unused")
    outcome = fetch(FetchRequest(request.entry, tmp_path / "root2", from_dir=tmp_path / "have"))
    assert outcome.checks[0].copy == "http://127.0.0.1:9/b/d.bin"


@pytest.mark.parametrize("attack", ["arrays 50,000 deep", "not UTF-8", "a name ending in a newline"])
def test_the_cli_says_error_naming_the_manifest_and_exits_2(tmp_path, attack):
    content = ATTACKS[attack][0]
    path = tmp_path / "BAD.toml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    result = CliRunner().invoke(app, ["data", "fetch", "--manifest", str(path), "--list"])
    assert result.exit_code == 2, result.output
    assert f"error: {path}" in result.output


def test_a_copy_that_redirects_is_checked_as_the_copy_the_manifest_names(tmp_path):
    """The copy is the URL asked for (before redirects): B's URL redirecting elsewhere is still B's copy, so A's
    bytes served there fail, and B's pass as B's (not as 'any copy')."""
    for data, passes in ((B, True), (A, False)):
        routes = {"/b/d.bin": Route(redirect="/s3/blob"), "/s3/blob": Route(data), "/a/d.bin": Route(A)}
        with Loopback(routes) as server:
            copies = [{"url": server.url("/a/d.bin"), "md5": digest(A, "md5")},
                      {"url": server.url("/b/d.bin"), "sha256": digest(B)}]  # fmt: skip
            (entry,) = parse_manifest(entry_toml([{"file": "d.bin", "copies": copies}]), "lab.toml")
            only_b = replace(entry.artefacts[0], urls=(server.url("/b/d.bin"),))  # B's URL alone is tried
            request = FetchRequest(replace(entry, artefacts=(only_b,)), tmp_path / str(passes) / "root")
            if passes:
                outcome = fetch(request)
                assert outcome.checks[0].copy == server.url("/b/d.bin")
            else:
                with pytest.raises(ChecksumError, match="served by .*/b/d.bin"):
                    fetch(request)
