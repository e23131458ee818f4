#include <stdio.h>
#ifndef HIT
#define HIT(k)
#endif
typedef struct { const unsigned char *p; size_t n; } buf;
int f(signed char a, unsigned char b) {
  buf bb2 = {0, 0};
  unsigned char lb3[3] = {0};
  const unsigned char *cur4 = 0;
  size_t k = 0;
  int r = 0;
  lb3[2] = (unsigned char)(b);
  bb2.p = lb3;
  bb2.n = 3;
  for (k = 0; k < bb2.n; k++) {
    cur4 = bb2.p + k;
  }
  if (cur4 != 0 && *cur4 == 5) {
    HIT(2) r = 42;
  }
  return r;
}
