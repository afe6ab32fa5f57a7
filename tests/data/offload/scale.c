// The device code in this folder's images: scale a vector in place.
void scale(float *x, float a, int n) {
  for (int i = 0; i < n; ++i)
    x[i] *= a;
}
