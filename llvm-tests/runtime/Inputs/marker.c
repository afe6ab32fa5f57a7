// A target region that reports which device image ran it: each device image
// is compiled with a different MARK, the host side with none.
#include <omp.h>
#include <stdio.h>

#ifndef MARK
#define MARK "host-fallback"
#endif

int main(void) {
  char Ran[32];
  int OnDevice = -1;
#pragma omp target map(from : Ran, OnDevice)
  {
    const char *Mark = MARK;
    int I = 0;
    for (; Mark[I] && I < 31; ++I)
      Ran[I] = Mark[I];
    Ran[I] = 0;
    OnDevice = !omp_is_initial_device();
  }
  printf("ran %s on_device=%d\n", Ran, OnDevice);
  return 0;
}
