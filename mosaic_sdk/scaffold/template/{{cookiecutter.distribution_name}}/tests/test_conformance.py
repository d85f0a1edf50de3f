"""The MOSAIC conformance suite against this worker, one pytest test per check.

A check that cannot pass yet can be listed in ``expected_failures`` with the reason; it then
runs as an expected failure instead of failing the build.
"""

from mosaic_sdk.conformance import parametrize_with_checks

from {{ cookiecutter.package_name }} import WORKER_TYPE


@parametrize_with_checks([WORKER_TYPE], expected_failures={})
def test_conformance(check):
    check()
