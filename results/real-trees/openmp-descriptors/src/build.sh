#!/bin/sh
# usage: build.sh DIR clang-args...   (run inside the root, cwd /tmp/omp)
set -e
d=$1; shift
rm -rf /tmp/omp/$d; mkdir -p /tmp/omp/$d; cd /tmp/omp/$d
clang -fopenmp "$@" -save-temps ../t.c -o a.out > build.log 2>&1 || { cat build.log; exit 1; }
llvm-dis a.out.openmp.image.wrapper.bc -o wrapper.ll
