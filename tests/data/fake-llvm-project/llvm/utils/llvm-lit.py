# Stand-in for the build's bin/llvm-lit: run the lit package of this Python.
from lit.main import main

main()
