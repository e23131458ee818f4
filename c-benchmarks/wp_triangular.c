// A triangular nest whose total step count must hit 105 (n = 15): the inner trip count
// depends on the outer counter.
// apc: --function main --call reach_error  expect=reachable
extern int __VERIFIER_nondet_int(void);
extern void reach_error(void);

int main(void) {
  int n = __VERIFIER_nondet_int();
  if (n < 0 || n > 40)
    return 0;
  int steps = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      steps++;
  if (steps == 105)
    reach_error();
  return 0;
}
