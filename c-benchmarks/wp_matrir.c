// MatrIR as a whole program: an m×n matrix (m, n ≤ 24) filled from nondet; some row of its
// upper triangle has more than 15 elements inside (10, 100).
// apc: --function main --call reach_error  expect=reachable
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);

#define MAXD 24

int main(void) {
  int A[MAXD * MAXD];
  int m = __VERIFIER_nondet_int();
  int n = __VERIFIER_nondet_int();
  if (m < 1 || m > MAXD || n < 1 || n > MAXD)
    return 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      A[i * n + j] = __VERIFIER_nondet_int();
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
  return 0;
}
