#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef HIT
#define HIT(k)
#endif
typedef struct { const unsigned char *p; size_t n; } buf;
typedef struct { int x; unsigned char c; short s; int arr[4]; } st;
extern int ext(int);
extern void ext_keep(int *);
int f(const unsigned char *s, unsigned char a) {
  int i = 0;
  int j = 0;
  int cnt1 = 0;
  short oa2[4] = {0};
  short ob3[4] = {0};
  short *pp4 = oa2;
  int cnt5 = 0;
  int r = 0;
  for (i = 0; i < (a & 15); i++) {
    for (j = i; j > 0; j--) {
      cnt1 = cnt1 + 1;
      if ((((a >= 100) ? j : -2) == 1)) {
        HIT(1) r = 17;
      }
    }
    if (((((unsigned char)(j)) != 4) && ((cnt1 / 5) > 4))) {
      break;
    }
  }
  if (cnt1 > 6) {
    HIT(2) r = 23;
  }
  for (i = 0; i < 4 && i < ((unsigned)(cnt1) % 20u) + 3; i++) {
    pp4++;
  }
  if (pp4 == ob3) {
    HIT(3) r = 23;
  }
  if (pp4 == &ob3[4] || pp4 == ob3 + 4) {
    HIT(4) r = 23;
  }
  for (i = 0; i < ((unsigned)(a) % 20u); i++) {
    for (j = i; j < 11 && (cnt1 != i); j++) {
      cnt5 = cnt5 + 1;
      if ((((unsigned short)(a)) == 4)) {
        HIT(5) r = 23;
      }
    }
  }
  if (cnt5 != 10) {
    HIT(6) r = 17;
  }
  return r;
}
