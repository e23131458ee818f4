// DOIF (loop-navigation paper; described, not listed there), written fresh in C: a scan whose
// action depends on each input value.
// apc: --function doif --call reach_error  expect=reachable
extern void reach_error(void);

void doif(const int *A, int n) {
  int ones = 0, twos = 0, others = 0;
  for (int i = 0; i < n; ++i) {
    if (A[i] == 1)
      ++ones;
    else if (A[i] == 2)
      twos += 2;
    else
      ++others;
  }
  if (ones == 7 && twos == 10 && others == 3)
    reach_error();
}
