// EQCNT (loop-navigation paper; described there), written fresh in C: nested loops with
// branching where a variable of the outermost scope changes in the innermost loop.
// apc: --function eqcnt --call reach_error  expect=reachable
extern void reach_error(void);

void eqcnt(const int *A, int n, int m) {
  int cnt = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j)
      if (A[i * m + j] == i)
        ++cnt;
  if (cnt == 5)
    reach_error();
}
