import _entry

_entry.run("selftest")
