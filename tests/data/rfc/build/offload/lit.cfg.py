# A stand-in for offload/test in a user's build (tests/rfc/test_rfc_build.py):
# two API tests pass, one is an expected failure, one is unsupported, and
# one passes only where the series is applied to the checkout (%checkout).
# ruff: noqa: F821  (lit defines `config`)
import os

import lit.formats

config.name = "user-offload"
config.test_format = lit.formats.ShTest()
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.environ["KDL_TEST_EXEC"], "offload")
config.substitutions.append(("%checkout", os.environ["CHECKOUT"]))
