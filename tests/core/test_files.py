"""Atomic writes: all-or-nothing, and files readable by others as the umask allows (a report can be served)."""

from __future__ import annotations

import os
import stat

import pytest

from lifelong.core.files import atomic_write_bytes, current_umask


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    previous = os.umask(umask)
    try:
        assert current_umask() == umask
        path = tmp_path / "sub" / "report.html"
        atomic_write_bytes(path, b"<html></html>")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == mode
    assert path.read_bytes() == b"<html></html>"
    assert [p.name for p in path.parent.iterdir()] == ["report.html"]  # no temp file left behind


def test_a_failed_write_keeps_the_old_file(tmp_path):
    path = tmp_path / "run.json"
    atomic_write_bytes(path, b"old")
    with pytest.raises(TypeError):
        atomic_write_bytes(path, "not bytes")  # type: ignore[arg-type]
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["run.json"]
