"""Fixtures shared by the test files (tests/llvm_tree.py defines them)."""

from tests.llvm_tree import llvm, series  # noqa: F401  (fixtures)
