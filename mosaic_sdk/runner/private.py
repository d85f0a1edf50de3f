"""Files and directories of runs that only their owner may read (they hold configs, worker
output and stderr): directories ``0700``, files ``0600``, whatever the umask."""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def make_dir(path: Path, *, exclusive: bool = False) -> None:
    """Create ``path`` (``0700``) and its missing parents (``0700`` too). ``exclusive``: raise
    ``FileExistsError`` when it exists already."""
    path = Path(path)
    if not path.parent.is_dir():
        make_dir(path.parent)
    try:
        os.mkdir(path, DIR_MODE)
    except FileExistsError:
        if exclusive or not path.is_dir():
            raise


def create_file(path: Path) -> None:
    """Create ``path`` empty with mode ``0600`` unless it exists (then it is left as it is)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE)
    os.close(fd)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), creating it with mode ``0600``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


__all__ = ["DIR_MODE", "FILE_MODE", "create_file", "make_dir", "write_text"]
