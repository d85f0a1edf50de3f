"""uPlot, the chart library of ``mosaic watch``: fetched from the npm registry when the SDK is
built, checked against its pinned sha512, and shipped in ``static/vendor/`` with its licence.

The files are not in the repository: the wheel and editable builds (``setup.py``'s
``build_py``), ``scripts/vendor-uplot``, ``scripts/test`` and ``scripts/demo`` run
:func:`ensure` before anything else. A build without the network fails with one message that
says so; ``MOSAIC_UPLOT_TARBALL=PATH`` points it at a tarball fetched elsewhere
(``npm pack uplot@VERSION``), checked against the same digest.

This module uses the standard library only: ``setup.py`` loads it by its path, before any of
the SDK's dependencies are installed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import urllib.error
import urllib.request
from pathlib import Path

#: The uPlot release shipped, and the ``dist.integrity`` the npm registry gives for its tarball.
UPLOT_VERSION = "1.6.32"
UPLOT_INTEGRITY = (
    "sha512-"
    "KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw=="
)
REGISTRY = "https://registry.npmjs.org"
#: Where the files go: served as ``/static/vendor/...``, and package data of the wheel.
VENDOR_DIR = Path(__file__).resolve().parent / "static" / "vendor"
#: Tarball member -> file name in :data:`VENDOR_DIR`.
FILES = {
    "package/dist/uPlot.iife.min.js": "uPlot.iife.min.js",
    "package/dist/uPlot.min.css": "uPlot.min.css",
    "package/LICENSE": "uPlot.LICENSE",
}
#: Written last: which release the folder holds (a folder from another pin is fetched again).
STAMP = "uplot.version.json"
TARBALL_ENV = "MOSAIC_UPLOT_TARBALL"
REGISTRY_ENV = "MOSAIC_NPM_REGISTRY"


class VendorError(RuntimeError):
    """uPlot could not be fetched or did not match its pinned digest."""


def tarball_url(registry: str = REGISTRY) -> str:
    return f"{registry.rstrip('/')}/uplot/-/uplot-{UPLOT_VERSION}.tgz"


def installed(target: Path | None = None) -> bool:
    """Whether ``target`` (default :data:`VENDOR_DIR`) holds every file of the pinned release."""
    target = VENDOR_DIR if target is None else target
    try:
        stamp = json.loads((target / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict) or stamp.get("integrity") != UPLOT_INTEGRITY:
        return False
    return all((target / name).is_file() for name in FILES.values())


def check_integrity(blob: bytes, expected: str | None = None) -> None:
    """VendorError unless ``blob``'s sha512 is ``expected`` (npm's ``sha512-<base64>``;
    default: :data:`UPLOT_INTEGRITY`)."""
    expected = expected or UPLOT_INTEGRITY
    got = "sha512-" + base64.b64encode(hashlib.sha512(blob).digest()).decode("ascii")
    if got != expected:
        raise VendorError(
            f"the uplot {UPLOT_VERSION} tarball does not match its pinned digest (expected "
            f"{expected}, got {got}): it was changed on the way; fetch it again from the npm "
            "registry"
        )


def download(url: str, timeout: float = 60.0) -> bytes:
    """The bytes at ``url``; VendorError saying what to do when it cannot be reached."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # noqa: S310 - https
            return bytes(response.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise VendorError(
            f"could not download uPlot {UPLOT_VERSION} from {url} ({reason}): mosaic watch "
            "draws its charts with it and the SDK's build fetches it from the npm registry. "
            f"Build with the network, or fetch the tarball elsewhere (npm pack "
            f"uplot@{UPLOT_VERSION}) and set {TARBALL_ENV}=PATH_TO_THE_TGZ"
        ) from None


def unpack(blob: bytes, target: Path) -> None:
    """Write :data:`FILES` of the (checked) tarball into ``target``, the stamp last."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member, name in FILES.items():
            try:
                source = tar.extractfile(member)
            except KeyError:
                source = None
            if source is None:
                raise VendorError(f"the uplot {UPLOT_VERSION} tarball has no {member}")
            (target / name).write_bytes(source.read())
    stamp = {"package": "uplot", "version": UPLOT_VERSION, "integrity": UPLOT_INTEGRITY}
    (target / STAMP).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")


def missing_message() -> str | None:
    """What ``mosaic watch`` says at start when the package has no uPlot (None when it has)."""
    if installed():
        return None
    return (
        f"uPlot is missing from {VENDOR_DIR}, so the pages draw no charts: reinstall the SDK "
        "(its build fetches uPlot) or run scripts/vendor-uplot in a source checkout"
    )


def ensure(target: Path | None = None, *, quiet: bool = False) -> Path:
    """uPlot's files in ``target`` (default :data:`VENDOR_DIR`), fetched (or read from
    ``$MOSAIC_UPLOT_TARBALL``) and checked when missing or from another pin; the folder."""
    target = VENDOR_DIR if target is None else target
    if installed(target):
        return target
    local = os.environ.get(TARBALL_ENV)
    if local:
        try:
            blob = Path(local).read_bytes()
        except OSError as exc:
            raise VendorError(f"{TARBALL_ENV}={local} cannot be read ({exc})") from None
        where = local
    else:
        where = tarball_url(os.environ.get(REGISTRY_ENV) or REGISTRY)
        blob = download(where)
    check_integrity(blob)
    unpack(blob, target)
    if not quiet:
        print(f"uPlot {UPLOT_VERSION} from {where} (sha512 checked) -> {target}")
    return target


def main(argv: list[str] | None = None) -> int:
    """``scripts/vendor-uplot [TARGET]``: fetch uPlot into the package (or TARGET)."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else VENDOR_DIR
    try:
        ensure(target)
    except VendorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
