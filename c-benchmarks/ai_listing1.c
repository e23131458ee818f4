// Listing 1 of the abstract-interpretation + DSE paper (Alatawi et al.), reconstructed in C from
// its invariants (x = counter + p, counter = (i − 3)/4, the target at counter = 20).
// apc: --function input_dependent_loop --call reach_error  expect=reachable
extern void reach_error(void);

void input_dependent_loop(int x) {
  int p = x, i = 3;
  while (1) {
    if (p <= 0)
      break;
    if (i >= 80)
      reach_error();
    --p;
    i += 4;
  }
}
