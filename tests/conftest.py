"""Shared test configuration."""

import pytest

# Helper modules shared by several test files: their asserts explain failures too.
pytest.register_assert_rewrite("active_common", "cli_common", "features_common")


def pytest_configure(config):
    # When a Hypothesis test fails, its plugin writes a patch with the failing
    # example and, through libcst, touches mypy_extensions.TypedDict, whose
    # DeprecationWarning ``filterwarnings = error`` turns into an INTERNALERROR
    # that hides the real failure.
    config.addinivalue_line(
        "filterwarnings", "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
    )
