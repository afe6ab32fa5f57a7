#include <stdio.h>
int f(void);
int main(void) {
  int x = 0;
#pragma omp target map(tofrom: x)
  x = 1;
  printf("x=%d f=%d\n", x, f());
  return 0;
}
