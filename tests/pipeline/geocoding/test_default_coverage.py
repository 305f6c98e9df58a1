"""The packaged offline default fills admin names as the geocoding issue asks (≥ 95%)."""

from __future__ import annotations

import contract
from tests.pipeline.test_build import check_coverage


def test_default_build_admin_name_coverage(default_build):
    version = contract.current_version_dir(default_build)
    coverage = contract.read_manifest(version)["areas"]["geocoding"]["coverage"]
    check_coverage(coverage, version)
    assert coverage["admin1_name"] >= 0.95
    # GeoNames itself has no admin2 for regions without a second-level division (about 16% of
    # cities15000): the target applies where the region has one.
    assert coverage["admin2_name_where_divided"] >= 0.95
