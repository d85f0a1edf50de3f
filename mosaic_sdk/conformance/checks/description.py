"""Description: metadata and capabilities validate, the version is PEP 440, the license SPDX."""

from __future__ import annotations

from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression
from packaging.version import InvalidVersion, Version

from mosaic_sdk.conformance.registry import PLATFORM, SDK, conformance_check
from mosaic_sdk.conformance.results import CheckFailed
from mosaic_sdk.conformance.subject import WorkerSubject
from mosaic_sdk.contract import unknown_vocabulary
from mosaic_sdk.hookspecs import PROTOCOL_VERSION


def _described(subject: WorkerSubject) -> tuple[object, object]:
    handle = subject.require_handle()
    try:
        return subject.memo("describe", handle.describe)  # type: ignore[no-any-return]
    except Exception as exc:  # noqa: BLE001
        raise CheckFailed(f"mosaic_worker_describe failed: {type(exc).__name__}: {exc}") from None


# The other description checks read it through subject.description(), which skips them
# when mosaic_worker_describe fails: metadata_valid reports that once.


@conformance_check(
    "description.metadata_valid",
    description="mosaic_worker_describe returns metadata and capabilities that validate",
    hint={
        PLATFORM: "Return (WorkerMetadata(...), WorkerCapabilities(...)) with the platform's "
        "fields from the entry point's factory; the message names the field that did not "
        "validate",
        SDK: "Return (WorkerMetadata(...), WorkerCapabilities(...)) from "
        "mosaic_worker_describe; the message names the field that did not validate",
    },
)
def metadata_valid(subject: WorkerSubject) -> str | None:
    _, caps = _described(subject)
    strange = unknown_vocabulary(caps)  # type: ignore[arg-type]
    if strange:
        listing = "; ".join(f"{k}: {', '.join(v)}" for k, v in strange.items())
        return f"valid; values outside the SDK's vocabularies: {listing}"
    return None


@conformance_check(
    "description.version_pep440",
    description="metadata.version is a PEP 440 version",
    hint="Use a version such as '1.2.0', '0.3.0rc1' or '2.0.post1' (usually the "
    "distribution's __version__)",
    levels=(SDK,),
)
def version_pep440(subject: WorkerSubject) -> str | None:

    meta, _ = subject.description()
    version = meta.version  # type: ignore[attr-defined]
    try:
        Version(version)
    except InvalidVersion:
        raise CheckFailed(f"metadata.version {version!r} is not a PEP 440 version") from None
    return None


@conformance_check(
    "description.license_spdx",
    description="metadata.license is an SPDX license identifier (or expression)",
    hint="Use an SPDX id such as 'MIT', 'Apache-2.0' or 'GPL-3.0-or-later' "
    "(see https://spdx.org/licenses/)",
    levels=(SDK,),
)
def license_spdx(subject: WorkerSubject) -> str | None:

    meta, _ = subject.description()
    text = meta.license  # type: ignore[attr-defined]
    if not text:
        raise CheckFailed("metadata.license is empty")
    try:
        canonical = canonicalize_license_expression(text)
    except InvalidLicenseExpression as exc:
        raise CheckFailed(f"metadata.license {text!r} is not an SPDX identifier ({exc})") from None
    return f"valid; canonical spelling is {canonical!r}" if canonical != text else None


@conformance_check(
    "description.protocol_version",
    description="The worker speaks the protocol version of this SDK",
    hint="Drop your mosaic_worker_protocol_version hook (the SDK answers for you) or upgrade "
    "the worker to this SDK's protocol",
    levels=(SDK,),
)
def protocol_version(subject: WorkerSubject) -> str | None:
    handle = subject.require_handle()
    try:
        version = handle.protocol_version()
    except Exception as exc:  # noqa: BLE001
        raise CheckFailed(f"mosaic_worker_protocol_version failed: {exc}") from None
    if version != PROTOCOL_VERSION:
        raise CheckFailed(
            f"the worker speaks protocol {version}; this SDK speaks {PROTOCOL_VERSION}"
        )
    return None
