// An accumulator of a symbolic amount (SV-COMP's loop-acceleration shape `sn += a`): after the
// loop sn = n·a, so the error is unreachable. The APC's a·κ ≠ n·a is beyond Z3's bit-blasting;
// the query with multiplication uninterpreted proves it.
// apc: --function sum --call reach_error  expect=unreachable
extern void reach_error(void);

void sum(int n, int a) {
  if (n < 0 || n > 1000 || a < 0 || a > 1000)
    return;
  int sn = 0;
  for (int i = 1; i <= n; i++)
    sn += a;
  if (!(sn == n * a || sn == 0))
    reach_error();
}
