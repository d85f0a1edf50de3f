"""POSIX shared-memory segments without Python's resource tracker.

``SharedMemory`` (3.10-3.12) registers every segment it opens with the resource tracker, which
unlinks it when *any* attaching process exits; here ``_posixshmem.shm_open`` and ``mmap`` are
used directly, and only the owner unlinks.

Every segment name starts with ``mosaic`` (``segment_name("run1")`` is ``"mosaic.shm.run1"``)
except the lrbc layout's, named exactly as given; a client tries both (``attach_candidates``).
"""

from __future__ import annotations

import mmap
import os
import re
import secrets

try:  # CPython's own binding; present on Linux and macOS.
    import _posixshmem
except ImportError:  # pragma: no cover - Windows / exotic builds
    _posixshmem = None

_DEV_SHM = "/dev/shm"
NAME_ENV = "MOSAIC_SHM_NAME"
LUCKY_NAME_ENV = "LUCKY_SHM_NAME"
PREFIX = "mosaic.shm."
_NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


def segment_name(name: str | None = None) -> str:
    """Return a valid segment name: a fresh random one, or ``name`` with the mosaic prefix."""
    if name is None:
        return PREFIX + secrets.token_hex(6)
    _check_name(name)
    return name if name.startswith("mosaic") else PREFIX + name


def _check_name(name: str) -> None:
    if not _NAME_RE.match(name):
        raise ValueError(
            f"shm segment name {name!r} is invalid: use 1-200 letters, digits, '.', '_' or '-' "
            "(no '/')"
        )


def exact_name(name: str | None) -> str:
    """``name`` (else ``$LUCKY_SHM_NAME``) validated and unchanged: the lrbc layout's naming."""
    if not name:
        name = os.environ.get(LUCKY_NAME_ENV, "").strip()
        if not name:
            raise ValueError(
                f"no shared-memory segment name: pass name=... or set {LUCKY_NAME_ENV} to the "
                "name the engine created"
            )
    _check_name(name)
    return name


def lrbc_name(name: str | None, default: str) -> str:
    """The lrbc layout's naming: ``name`` exactly, else ``$LUCKY_SHM_NAME``, else ``default``."""
    if not name and not os.environ.get(LUCKY_NAME_ENV, "").strip():
        name = default
    return exact_name(name)


def attach_candidates(name: str | None) -> tuple[str, ...]:
    """The names a client looks for, in order: ``name`` with the mosaic prefix, then exactly as
    given (an lrbc engine's); without ``name``, ``$MOSAIC_SHM_NAME`` then ``$LUCKY_SHM_NAME``."""
    if not name:
        if os.environ.get(NAME_ENV, "").strip():
            return (name_from_env(None),)
        if os.environ.get(LUCKY_NAME_ENV, "").strip():
            return (exact_name(None),)
        name_from_env(None)  # raises the error that names both ways
    assert name is not None
    prefixed = segment_name(name)
    return (prefixed,) if prefixed == name else (prefixed, exact_name(name))


def name_from_env(name: str | None) -> str:
    """``name`` if given, else ``$MOSAIC_SHM_NAME``; a clear error when neither is set."""
    if name:
        return segment_name(name)
    env = os.environ.get(NAME_ENV, "").strip()
    if not env:
        raise ValueError(
            f"no shared-memory segment name: pass name=... or set {NAME_ENV} (or "
            f"{LUCKY_NAME_ENV} for an lrbc engine) to the name printed by the engine"
        )
    return segment_name(env)


def shm_open(name: str, *, create: bool = False, readonly: bool = False) -> int:
    """Open (or, with ``create``, exclusively create) POSIX segment ``name``; returns an fd.
    The SDK's one place that opens shared memory."""
    flags = os.O_RDONLY if readonly else os.O_RDWR
    if create:
        flags |= os.O_CREAT | os.O_EXCL
    if _posixshmem is not None:
        return int(_posixshmem.shm_open("/" + name, flags, 0o600))
    if os.path.isdir(_DEV_SHM):  # pragma: no cover - CPython without _posixshmem
        return os.open(os.path.join(_DEV_SHM, name), flags | os.O_CLOEXEC, 0o600)
    raise OSError("POSIX shared memory is not available on this platform")  # pragma: no cover


def shm_unlink(name: str) -> bool:
    """Remove the name ``name``; False when it did not exist. Mappings stay valid."""
    try:
        if _posixshmem is not None:
            _posixshmem.shm_unlink("/" + name)
        else:  # pragma: no cover
            os.unlink(os.path.join(_DEV_SHM, name))
    except FileNotFoundError:
        return False
    return True


def create_segment(name: str, size: int) -> mmap.mmap:
    """Create segment ``name`` of ``size`` bytes (zero-filled); fails if it already exists."""
    try:
        fd = shm_open(name, create=True)
    except FileExistsError:
        raise FileExistsError(
            f"shared-memory segment {name!r} already exists: another engine is using that name "
            "(pick another) or a crashed run left it (remove it with unlink_segment)"
        ) from None
    try:
        os.ftruncate(fd, size)
        return mmap.mmap(fd, size)
    except BaseException:
        unlink_segment(name)
        raise
    finally:
        os.close(fd)


def attach_segment(name: str) -> mmap.mmap:
    """Map the existing segment ``name`` read-write (never registers it for cleanup)."""
    try:
        fd = shm_open(name)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no shared-memory segment named {name!r}: start the engine first, or check the "
            f"name (argument or ${NAME_ENV})"
        ) from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            raise FileNotFoundError(f"shared-memory segment {name!r} is still being created")
        return mmap.mmap(fd, size)
    finally:
        os.close(fd)


def unlink_segment(name: str) -> bool:
    """Remove segment ``name``; True if it existed. Mappings stay valid until closed."""
    return shm_unlink(name)


def segment_exists(name: str) -> bool:
    """True while segment ``name`` is present (not unlinked)."""
    try:
        fd = shm_open(name, readonly=True)
    except FileNotFoundError:
        return False
    os.close(fd)
    return True
