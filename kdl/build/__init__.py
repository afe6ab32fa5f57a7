"""Building and testing: the overlay against LLVM 22 (:mod:`.overlay`), an
llvm-project build (:mod:`.llvm`), the lit suite (:mod:`.lit`) and
``ninja check-offload`` with the series' own tests (:mod:`.checkoffload`)."""
