// Bit-precise semantics: the unsigned counter wraps past 2^32 and lands on 3.
// apc: --function wrap --call reach_error  expect=reachable
extern void reach_error(void);

void wrap(unsigned x) {
  while (x > 10u)
    x += 7u;
  if (x == 3u)
    reach_error();
}
