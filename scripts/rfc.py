import _entry

_entry.run("rfc")
