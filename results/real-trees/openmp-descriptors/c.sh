#!/bin/sh
# run a command inside the LLVM-main Debian root, in /tmp/omp
exec chroot /work/main/.work/trees/main /usr/bin/env PATH=/usr/lib/llvm-24/bin:/usr/bin:/bin LD_LIBRARY_PATH=/usr/lib/llvm-24/lib sh -c "cd /tmp/omp && $*"
