// MatrIR (APC paper, Appendix A), written fresh in C: scan the upper triangle of an m×n matrix
// (row-major in A) and count, per row, the elements inside (10, 100).
// apc: --function matrir --call reach_error  expect=reachable
extern void reach_error(void);

void matrir(int *A, int m, int n) {
  int w = 0;
  for (int i = 0; i < m; ++i) {
    int k = 0;
    for (int j = i; j < n; ++j)
      if (A[i * n + j] > 10 && A[i * n + j] < 100)
        ++k;
    if (k > 15) {
      w = 1;
      break;
    }
  }
  if (m > 20 && n > 20 && w == 1)
    reach_error();
}
