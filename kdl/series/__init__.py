"""The series: what it is (:mod:`.model`), the llvm-project checkout it goes
onto (:mod:`.checkout`, :mod:`.match`, :mod:`.undo`), and the commands over
both: apply, check, status, revert, export (:mod:`.commands`), pull requests
(:mod:`.pr`) and the check against upstream's headers (:mod:`.upstream`)."""
