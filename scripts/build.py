import _entry

_entry.run("build")
