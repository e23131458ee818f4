// The running example of the APC paper as a whole program: n nondet ints, more than nine 1s.
// apc: --function main --call reach_error  expect=reachable
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);

int main(void) {
  int A[100];
  int n = __VERIFIER_nondet_int();
  if (n < 0 || n > 100)
    return 0;
  for (int i = 0; i < n; ++i)
    A[i] = __VERIFIER_nondet_int();
  int k = 3;
  for (int i = 0; i < n; ++i) {
    if (A[i] == 1)
      ++k;
  }
  if (k > 12)
    reach_error();
  return 0;
}
