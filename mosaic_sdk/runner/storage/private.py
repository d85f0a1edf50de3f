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
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, FILE_MODE))


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8), creating it with mode ``0600``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)


def restrict_tree(path: Path) -> None:
    """Make ``path`` and everything under it owner-only (directories ``0700``, files
    ``0600``), for trees written by code that does not choose its modes (Ray Tune's state).
    Symbolic links are left alone; a file removed meanwhile is skipped."""
    path = Path(path)
    if not path.is_dir() or path.is_symlink():
        return
    for root, dirs, files in os.walk(path):
        for name, mode in [(d, DIR_MODE) for d in dirs] + [(f, FILE_MODE) for f in files]:
            entry = os.path.join(root, name)
            try:
                if not os.path.islink(entry):
                    os.chmod(entry, mode)
            except FileNotFoundError:
                pass
    os.chmod(path, DIR_MODE)
