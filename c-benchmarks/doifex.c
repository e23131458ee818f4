// DOIFex (loop-navigation paper; described there), written fresh in C: two DOIF scans in sequence.
// apc: --function doifex --call reach_error  expect=reachable
extern void reach_error(void);

void doifex(const int *A, const int *B, int n) {
  int a = 0, b = 0, c = 0, d = 0;
  for (int i = 0; i < n; ++i) {
    if (A[i] == 1)
      ++a;
    else
      ++b;
  }
  for (int i = 0; i < n; ++i) {
    if (B[i] > 5)
      c += 3;
    else
      ++d;
  }
  if (a == 6 && b == 2 && c == 12 && d == 4)
    reach_error();
}
