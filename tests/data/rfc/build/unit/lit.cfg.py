# A stand-in for offload/test/unit (check-offload-unit): two tests pass, one
# passes only where the series is applied to the checkout (%checkout).
# ruff: noqa: F821  (lit defines `config`)
import os

import lit.formats

config.name = "user-offload-unit"
config.test_format = lit.formats.ShTest()
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(os.environ["KDL_TEST_EXEC"], "unit")
config.substitutions.append(("%checkout", os.environ["CHECKOUT"]))
