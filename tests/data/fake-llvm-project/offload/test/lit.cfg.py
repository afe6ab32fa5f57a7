# A tiny stand-in for offload/test: two API tests pass, one is unsupported,
# two fail (one at the top, one in a subdirectory).
# ruff: noqa: F821  (lit defines `config`)
import os

import lit.formats

config.name = "fake-offload"
config.test_format = lit.formats.ShTest()
config.suffixes = [".test"]
config.test_source_root = os.path.dirname(__file__)
