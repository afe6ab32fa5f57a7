int main(void) {
  int ran = 0;
#pragma omp target map(tofrom : ran)
  ran = 1;
  return !ran;
}
