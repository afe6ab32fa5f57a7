"""LLVM's OffloadBinary container: read versions 1 and 2, write both.

:mod:`kdl.offload.binary` is the API (``read_file``, ``parse``, ``scan``,
``write_v1``, ``write_v2``); :mod:`kdl.offload.layout` holds the
byte layout and the :class:`~kdl.offload.layout.Image` record;
:mod:`kdl.offload.elf` finds ``.llvm.offloading`` sections.
"""
