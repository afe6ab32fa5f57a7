import _entry

_entry.run("test")
