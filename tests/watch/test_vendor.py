"""uPlot's vendoring (mosaic_sdk/watch/vendor.py): pinned digest, offline message, files shipped."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from dataclasses import replace
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


def test_the_package_holds_the_pinned_echarts_with_its_licence_and_notice() -> None:
    lib = vendor.ECHARTS
    assert vendor.installed(library=lib), "run scripts/vendor-echarts (the SDK's build does it)"
    stamp = json.loads((vendor.VENDOR_DIR / lib.stamp).read_text())
    assert stamp == {"package": "echarts", "version": lib.version, "integrity": lib.integrity}
    assert "Apache License" in (vendor.VENDOR_DIR / "echarts.LICENSE").read_text()
    assert "Apache ECharts" in (vendor.VENDOR_DIR / "echarts.NOTICE").read_text()
    assert "Redistribution" in (vendor.VENDOR_DIR / "echarts.LICENSE-d3").read_text()
    assert vendor.missing_message() is None


def test_each_library_is_fetched_from_its_own_tarball_and_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blob = fake_tarball({member: member.encode() for member in vendor.ECHARTS.files})
    tgz = tmp_path / "echarts.tgz"
    tgz.write_bytes(blob)
    fake = replace(vendor.ECHARTS, integrity=integrity(blob))
    monkeypatch.setattr(vendor, "ECHARTS", fake)
    monkeypatch.setenv(fake.tarball_env, str(tgz))
    target = tmp_path / "vendor"
    assert vendor.main(["--library", "echarts", str(target)]) == 0
    assert (target / "echarts.NOTICE").read_text() == "package/NOTICE"
    assert vendor.installed(target, fake) and not vendor.installed(target)  # uPlot: not asked
    tgz.write_bytes(fake_tarball({m: b"evil" for m in fake.files}))
    assert vendor.main(["--library", "echarts", str(tmp_path / "other")]) == 1
    assert "echarts 6.1.0 tarball does not match its pinned digest" in capsys.readouterr().err
    assert vendor.main(["--library", "plotly", str(target)]) == 1
    assert "no chart library 'plotly' is vendored (known: uplot, echarts)" in (
        capsys.readouterr().err
    )


def test_offline_the_echarts_build_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(vendor.ECHARTS.tarball_env, raising=False)
    monkeypatch.setenv(vendor.REGISTRY_ENV, "http://127.0.0.1:9")
    assert vendor.main(["--library", "echarts", str(tmp_path / "vendor")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: could not download ECharts 6.1.0")
    assert f"npm pack echarts@{vendor.ECHARTS_VERSION}" in err
    assert "MOSAIC_ECHARTS_TARBALL=PATH_TO_THE_TGZ" in err
