import _entry

_entry.run("all")
