"""The conformance suite as pytest items (collected only with ``--mosaic-worker NAME``).

``pytest --pyargs mosaic_sdk.conformance --mosaic-worker NAME`` runs it from an installed SDK;
the ``mosaic_conformance_case`` parameter is supplied by ``mosaic_sdk.conformance.pytest_plugin``.
"""

from __future__ import annotations

from mosaic_sdk.conformance.cases import CheckCase


def test_conformance(mosaic_conformance_case: CheckCase) -> None:
    """Run one conformance check on one worker."""
    result = mosaic_conformance_case()
    assert result.ok, result.reason
