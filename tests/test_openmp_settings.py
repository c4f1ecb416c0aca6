"""The OpenMP runtime's idle spin, which sscrf shortens when it loads (see
sscrf/__init__.py), unless the user set the runtime's wait settings."""

import os
import subprocess
import sys

import pytest

import sscrf


def runtime_in_child(env_settings):
    """(GOMP_SPINCOUNT as the child's Python sees it after `import sscrf`, the
    OpenMP runtime's displayed settings) in a fresh interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DISPLAY_ENV")}
    env.update(env_settings, OMP_DISPLAY_ENV="VERBOSE")
    code = "import os, sscrf; print(os.environ.get('GOMP_SPINCOUNT'))"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.strip(), done.stderr


def displayed(stderr, name):
    """The value the runtime displays for `name` (OMP_DISPLAY_ENV), or None."""
    for line in stderr.splitlines():
        key, _, value = line.strip().partition(" = ")
        if key == name:
            return value.strip("'")
    return None


GNU_OPENMP = sscrf.build_info()["openmp"] and sscrf.build_info()["compiler"].startswith("gcc")


@pytest.mark.parametrize("settings, spin", [
    ({}, "3000"),                                # shortened from libgomp's 300000
    ({"GOMP_SPINCOUNT": "77"}, "77"),            # the user's own
    ({"OMP_WAIT_POLICY": "active"}, None),       # the user's policy: libgomp decides
])
def test_idle_spin_is_short_unless_the_user_chose(settings, spin):
    seen, stderr = runtime_in_child(settings)
    # the environment the child's own children inherit is the user's
    assert seen == settings.get("GOMP_SPINCOUNT", "None")
    if GNU_OPENMP:  # libgomp shows its settings; other runtimes ignore GOMP_SPINCOUNT
        shown = displayed(stderr, "GOMP_SPINCOUNT")
        assert shown is not None, stderr
        if spin is not None:
            assert shown == spin
        else:
            assert shown != "3000" and displayed(stderr, "OMP_WAIT_POLICY") == "ACTIVE"
