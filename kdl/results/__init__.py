"""Measured results: the selection benchmark (:mod:`.bench`) and the reports
of the GPU harness (:mod:`.gpureport`, :mod:`.realruntimes`)."""
