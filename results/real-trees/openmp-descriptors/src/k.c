int f(void) {
  int y = 0;
#pragma omp target map(tofrom: y)
  y = 2;
  return y;
}
