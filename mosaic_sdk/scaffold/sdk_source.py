"""Where a baked worker's CI installs the SDK from: the ``sdk_requirement`` answer."""

from __future__ import annotations

import json
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

DISTRIBUTION = "mosaic-worker-sdk"
#: The requirement once the SDK is on the package index.
INDEX_REQUIREMENT = "mosaic-worker-sdk>=0.1"
_EXAMPLE = "e.g. 'mosaic-worker-sdk @ git+https://github.com/you/mosaic-worker-sdk@main'"


def requirement_from_direct_url(text: str) -> str | None:
    """The requirement that reinstalls what ``direct_url.json`` (PEP 610) describes, when a
    CI machine can reach it (a VCS or an http(s) archive); ``None`` for a local path."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    url = str(data.get("url", ""))
    if not url.startswith(("https://", "http://", "ssh://", "git@")):
        return None
    vcs = data.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        commit = vcs.get("commit_id") or vcs.get("requested_revision")
        pinned = f"@{commit}" if commit else ""
        return f"{DISTRIBUTION} @ {vcs['vcs']}+{url}{pinned}"
    if "archive_info" in data:
        return f"{DISTRIBUTION} @ {url}"
    return None


def default_sdk_requirement() -> str:
    """``sdk_requirement``'s default: the reachable source of the SDK running this code (its
    ``direct_url.json``), else the index."""
    try:
        text = metadata.distribution(DISTRIBUTION).read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        text = None
    return (requirement_from_direct_url(text) if text else None) or INDEX_REQUIREMENT


def from_index(requirement: str) -> bool:
    """Whether ``requirement`` relies on the package index (no direct reference)."""
    return Requirement(requirement).url is None


def check_sdk_requirement(value: str) -> list[str]:
    """Problems of an ``sdk_requirement`` answer: one pip requirement of mosaic-worker-sdk."""
    if not value.strip() or any(not ch.isprintable() for ch in value):
        return [f"sdk_requirement {value!r} must be one line of text; {_EXAMPLE}"]
    try:
        requirement = Requirement(value)
    except InvalidRequirement as exc:
        reason = str(exc).splitlines()[0]
        return [f"sdk_requirement {value!r} is not a pip requirement ({reason}); {_EXAMPLE}"]
    if canonicalize_name(requirement.name) != DISTRIBUTION:
        return [
            f"sdk_requirement {value!r} names {requirement.name!r}, not {DISTRIBUTION}; " + _EXAMPLE
        ]
    return []
