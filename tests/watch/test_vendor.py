"""uPlot's vendoring (mosaic_sdk/watch/vendor.py): pinned digest, offline message, files shipped."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pytest

from mosaic_sdk.watch import vendor


def fake_tarball(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, body in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return out.getvalue()


def integrity(blob: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(blob).digest()).decode()


def test_the_package_holds_the_pinned_uplot_and_its_licence() -> None:
    assert vendor.installed(), "run scripts/vendor-uplot (the SDK's build does it)"
    stamp = json.loads((vendor.VENDOR_DIR / vendor.STAMP).read_text())
    assert stamp["version"] == vendor.UPLOT_VERSION
    assert "MIT" in (vendor.VENDOR_DIR / "uPlot.LICENSE").read_text()
    assert "uPlot" in (vendor.VENDOR_DIR / "uPlot.iife.min.js").read_text()


def test_a_tarball_from_elsewhere_is_unpacked_once_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = fake_tarball({member: member.encode() for member in vendor.FILES})
    tgz = tmp_path / "uplot.tgz"
    tgz.write_bytes(blob)
    monkeypatch.setattr(vendor, "UPLOT_INTEGRITY", integrity(blob))
    monkeypatch.setenv(vendor.TARBALL_ENV, str(tgz))
    target = tmp_path / "vendor"
    vendor.ensure(target, quiet=True)
    assert (target / "uPlot.LICENSE").read_text() == "package/LICENSE"
    assert vendor.installed(target)
    tgz.unlink()  # there already: not read again
    vendor.ensure(target, quiet=True)


def test_a_changed_tarball_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tgz = tmp_path / "uplot.tgz"
    tgz.write_bytes(fake_tarball({member: b"evil" for member in vendor.FILES}))
    monkeypatch.setenv(vendor.TARBALL_ENV, str(tgz))
    with pytest.raises(vendor.VendorError, match="does not match its pinned digest"):
        vendor.ensure(tmp_path / "vendor", quiet=True)
    assert not (tmp_path / "vendor" / "uPlot.iife.min.js").exists()


def test_offline_the_build_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(vendor.TARBALL_ENV, raising=False)
    monkeypatch.setenv(vendor.REGISTRY_ENV, "http://127.0.0.1:9")  # nothing listens there
    assert vendor.main([str(tmp_path / "vendor")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: could not download uPlot")
    assert vendor.TARBALL_ENV in err and f"npm pack uplot@{vendor.UPLOT_VERSION}" in err


def test_the_watch_guide_names_the_pinned_release() -> None:
    guide = Path(__file__).resolve().parents[2] / "docs" / "guides" / "watch.md"
    text = guide.read_text(encoding="utf-8")
    assert f"npm pack uplot@{vendor.UPLOT_VERSION}" in text
    assert f"uplot-{vendor.UPLOT_VERSION}.tgz" in text


def test_watch_says_at_start_when_the_package_has_no_uplot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert vendor.missing_message() is None  # the build put it there
    monkeypatch.setattr(vendor, "VENDOR_DIR", tmp_path / "vendor")
    message = vendor.missing_message()
    assert message is not None and "scripts/vendor-uplot" in message
