"""One writer per run folder: an exclusive lock that a second process finds at once, naming the holder.

The lock is `fcntl.flock` on `<run folder>/.lock`: the kernel releases it when the holder exits, however it
exits (a kill -9 included), so a stale lock file never blocks a resume. The file records the holder's PID and
command for the message the second process prints; starting a run over (--overwrite) empties the folder but
keeps this file, so the lock is never dropped while held.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path


class RunFolderBusyError(RuntimeError):
    """Another process is writing this run folder."""


LOCK_FILE = ".lock"


@contextlib.contextmanager
def run_folder_lock(folder: str | os.PathLike) -> Iterator[Path]:
    """Hold the run folder for this process; raise RunFolderBusyError if another process holds it."""
    path = Path(folder) / LOCK_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "another process"
            raise RunFolderBusyError(
                f"run folder {str(folder)!r} is being written by {holder}; wait for it to finish (or stop it), "
                "then run again (with --resume to continue it), or choose another --out"
            ) from None
        os.ftruncate(fd, 0)
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        os.pwrite(fd, f"PID {os.getpid()} ({' '.join(sys.argv[:3])}, since {started})\n".encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock
