import _entry

_entry.run("apply")
