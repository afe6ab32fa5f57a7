#include <stdio.h>
#include <omp.h>
int main(void) {
  int x = 0, dev = -1;
#pragma omp target map(tofrom: x, dev)
  { x = 42; dev = omp_is_initial_device(); }
  printf("x=%d initial=%d num_devices=%d\n", x, dev, omp_get_num_devices());
  return 0;
}
