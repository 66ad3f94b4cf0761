"""One writer per run folder: an exclusive lock that a second process finds at once, naming the holder.

The lock is `fcntl.flock` on `<run folder>/.lock`: the kernel releases it when the holder exits, however it
exits (a kill -9 included), so a stale lock file never blocks a resume. The file records the holder's PID and
command for the message the second process prints; starting a run over (--overwrite) empties the folder but
keeps this file, so the lock is never dropped while held. On release the holder deletes the file (and the
folder, when nothing else is in it: a run refused after taking the lock leaves no folder behind); a process
that took the lock on a file deleted meanwhile sees so and takes the new one.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from lifelong.core.errors import LifelongError


class RunFolderBusyError(LifelongError, RuntimeError):
    """Another process is writing this run folder."""


LOCK_FILE = ".lock"


@contextlib.contextmanager
def run_folder_lock(folder: str | os.PathLike) -> Iterator[Path]:
    """Hold the run folder for this process; raise RunFolderBusyError if another process holds it."""
    folder = Path(folder)
    path = folder / LOCK_FILE
    while True:
        folder.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except FileNotFoundError:  # the folder went with the previous holder's release: make it again
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise RunFolderBusyError(
                f"run folder {folder} is being written by {holder}; wait for it to finish (or stop it), "
                "then run again (with --resume to continue it), or choose another --out"
            ) from None
        if _same_file(fd, path):
            break
        os.close(fd)  # the holder before us deleted this lock file as it let go: take the current one
    try:
        os.ftruncate(fd, 0)
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        os.pwrite(fd, f"PID {os.getpid()} ({' '.join(sys.argv[:3])}, since {started})\n".encode(), 0)
        yield path
    finally:
        with contextlib.suppress(OSError):
            path.unlink()  # while still held: no stale lock file stays behind
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty: a run refused after taking the lock leaves no folder
        os.close(fd)  # releases the lock


def _same_file(fd: int, path: Path) -> bool:
    """Whether `path` still names the file open as `fd`."""
    try:
        named, held = os.stat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
