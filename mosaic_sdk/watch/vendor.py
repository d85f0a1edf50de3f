"""The chart libraries of ``mosaic watch`` (uPlot, ECharts), fetched from npm when the SDK is
built, checked against their pinned sha512. Standard library only: ``setup.py`` runs it."""

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
from dataclasses import dataclass
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


#: Apache ECharts (Apache-2.0), the sweep page's parallel coordinates and importance bars:
#: a maintained library whose parallel series is drawn as SVG (one path per line, clickable),
#: 1.1 MB minified (Plotly's ``plotly.js-dist-min``, the other candidate, is about 4.7 MB and
#: draws its parcoords with WebGL, whose lines take no click).
ECHARTS_VERSION = "6.1.0"
ECHARTS_INTEGRITY = (
    "sha512-"
    "q0yaFPggC9FUdsWH4blavRWFmxdrIodbkoKNAjJudAI6CA9gNPxHtV2RcZNEepZVlk4yvBYkOkbk6HIVpIyHZA=="
)


class VendorError(RuntimeError):
    """A chart library could not be fetched or did not match its pinned digest."""


@dataclass(frozen=True)
class Library:
    """One npm package shipped in :data:`VENDOR_DIR`: ``files`` maps tarball members to file
    names there; ``stamp`` is written last and names the pin the folder holds."""

    name: str
    package: str
    version: str
    integrity: str
    files: dict[str, str]
    stamp: str
    tarball_env: str
    used_for: str

    def tarball_url(self, registry: str = REGISTRY) -> str:
        return f"{registry.rstrip('/')}/{self.package}/-/{self.package}-{self.version}.tgz"


def uplot() -> Library:
    """uPlot's pin (read from the module's constants when asked)."""
    return Library(
        "uPlot", "uplot", UPLOT_VERSION, UPLOT_INTEGRITY, FILES, STAMP, TARBALL_ENV, "its charts"
    )


ECHARTS = Library(
    "ECharts",
    "echarts",
    ECHARTS_VERSION,
    ECHARTS_INTEGRITY,
    {
        "package/dist/echarts.min.js": "echarts.min.js",
        "package/LICENSE": "echarts.LICENSE",
        "package/NOTICE": "echarts.NOTICE",
        "package/licenses/LICENSE-d3": "echarts.LICENSE-d3",
    },
    "echarts.version.json",
    "MOSAIC_ECHARTS_TARBALL",
    "the sweep page's parallel coordinates and importance bars",
)


def libraries() -> list[Library]:
    """Every library shipped: uPlot, then ECharts."""
    return [uplot(), ECHARTS]


def _library(name: str) -> Library:
    for lib in libraries():
        if name.lower() in (lib.name.lower(), lib.package):
            return lib
    known = ", ".join(lib.package for lib in libraries())
    raise VendorError(f"no chart library {name!r} is vendored (known: {known})")


def installed(target: Path | None = None, library: Library | None = None) -> bool:
    """Whether ``target`` (default :data:`VENDOR_DIR`) holds every file of the pinned release
    of ``library`` (default uPlot)."""
    target = VENDOR_DIR if target is None else target
    lib = library or uplot()
    try:
        stamp = json.loads((target / lib.stamp).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(stamp, dict) or stamp.get("integrity") != lib.integrity:
        return False
    return all((target / name).is_file() for name in lib.files.values())


def check_integrity(blob: bytes, lib: Library) -> None:
    """VendorError unless ``blob``'s sha512 is the pin of ``lib`` (npm's ``sha512-<base64>``)."""
    got = "sha512-" + base64.b64encode(hashlib.sha512(blob).digest()).decode("ascii")
    if got != lib.integrity:
        raise VendorError(
            f"the {lib.package} {lib.version} tarball does not match its pinned digest "
            f"(expected {lib.integrity}, got {got}): it was changed on the way; fetch it again "
            "from the npm registry"
        )


def download(url: str, lib: Library) -> bytes:
    """The bytes at ``url``; VendorError saying what to do when it cannot be reached."""
    try:
        with urllib.request.urlopen(url, timeout=60.0) as response:  # noqa: S310 - https
            return bytes(response.read())
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise VendorError(
            f"could not download {lib.name} {lib.version} from {url} ({reason}): mosaic watch "
            f"draws {lib.used_for} with it and the SDK's build fetches it from the npm "
            f"registry. Build with the network, or fetch the tarball elsewhere (npm pack "
            f"{lib.package}@{lib.version}) and set {lib.tarball_env}=PATH_TO_THE_TGZ"
        ) from None


def unpack(blob: bytes, target: Path, lib: Library) -> None:
    """Write the files of the (checked) tarball of ``lib`` into ``target``, the stamp last."""
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        for member, name in lib.files.items():
            try:
                source = tar.extractfile(member)
            except KeyError:
                source = None
            if source is None:
                raise VendorError(f"the {lib.package} {lib.version} tarball has no {member}")
            (target / name).write_bytes(source.read())
    stamp = {"package": lib.package, "version": lib.version, "integrity": lib.integrity}
    (target / lib.stamp).write_text(json.dumps(stamp, indent=1) + "\n", encoding="utf-8")


def missing_message() -> str | None:
    """What ``mosaic watch`` says at start when the package lacks a chart library (None when
    it has them all)."""
    missing = [lib for lib in libraries() if not installed(library=lib)]
    if not missing:
        return None
    names = " and ".join(lib.name for lib in missing)
    scripts = " and ".join(f"scripts/vendor-{lib.package}" for lib in missing)
    return (
        f"{names} missing from {VENDOR_DIR}, so the pages draw no charts with it: reinstall "
        f"the SDK (its build fetches them) or run {scripts} in a source checkout"
    )


def ensure(
    target: Path | None = None, *, quiet: bool = False, library: Library | None = None
) -> Path:
    """The files of ``library`` (default uPlot) in ``target`` (default :data:`VENDOR_DIR`),
    fetched (or read from its ``$MOSAIC_..._TARBALL``) and checked when missing or from
    another pin; the folder."""
    target = VENDOR_DIR if target is None else target
    lib = library or uplot()
    if installed(target, lib):
        return target
    local = os.environ.get(lib.tarball_env)
    if local:
        try:
            blob = Path(local).read_bytes()
        except OSError as exc:
            raise VendorError(f"{lib.tarball_env}={local} cannot be read ({exc})") from None
        where = local
    else:
        where = lib.tarball_url(os.environ.get(REGISTRY_ENV) or REGISTRY)
        blob = download(where, lib)
    check_integrity(blob, lib)
    unpack(blob, target, lib)
    if not quiet:
        print(f"{lib.name} {lib.version} from {where} (sha512 checked) -> {target}")
    return target


def ensure_all(target: Path | None = None, *, quiet: bool = False) -> Path:
    """Every library of :func:`libraries` in ``target`` (what the SDK's build runs)."""
    target = VENDOR_DIR if target is None else target
    for lib in libraries():
        ensure(target, quiet=quiet, library=lib)
    return target


def main(argv: list[str] | None = None) -> int:
    """``vendor.py [--library uplot|echarts] [TARGET]`` (``scripts/vendor-uplot``,
    ``scripts/vendor-echarts``): fetch that library (default: all) into the package (or
    TARGET)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        chosen = libraries()
        if args[:1] == ["--library"]:
            if len(args) < 2:
                raise VendorError("--library needs a name: uplot or echarts")
            chosen = [_library(args[1])]
            args = args[2:]
        target = Path(args[0]) if args else VENDOR_DIR
        for lib in chosen:
            ensure(target, library=lib)
    except VendorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
