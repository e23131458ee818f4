// SV-COMP style: inputs from __VERIFIER_nondet_*, the target is the call to reach_error.
// apc: --function main --call reach_error  expect=reachable
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);

int main(void) {
  int n = __VERIFIER_nondet_int();
  if (n < 0 || n > 1000)
    return 0;
  int x = 0;
  for (int i = 0; i < n; i++)
    x += 3;
  if (x == 300)
    reach_error();
  return 0;
}
