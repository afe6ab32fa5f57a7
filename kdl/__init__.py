"""kdl: ranked OffloadBinary image selection for LLVM.

The package behind the ``kdl`` command and the ``scripts/*.py`` wrappers. The
command-line layer lives in :mod:`kdl.cli`; everything else is a library that
raises :class:`kdl.errors.WorkspaceError` and never exits on its own.
"""

__version__ = "0.1.0"
