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
void target_4(void);
void target_5(void);
int f(unsigned char a, unsigned char b) {
  unsigned char u1 = 0;
  int dx2 = 0;
  int dn3 = 0;
  int i = 0;
  st st4 = {0};
  int w5[4] = {0};
  int r = 0;
  u1 = (unsigned char)(31);
  if (u1 > 7) {
    HIT(1) r = 17;
  }
  dx2 = (int)(3);
  do {
    dx2 = (int)(dx2 * 129 + 2);
    dn3++;
  } while (dx2 != (int)5 && dn3 < 5);
  if (dn3 > 20) {
    HIT(2) r = 23;
  }
  for (i = 0; i < 4; i++) {
    st4.arr[i] = ((dn3 / 9) & 200);
  }
  for (i = 0; i < 4; i++) {
    if (st4.arr[i] == -2) {
      HIT(3) r = 5;
    }
  }
  if (st4.arr[(unsigned char)(u1) % 4] < 64) {
    target_4();
  }
  if (st4.x == -1) {
    target_5();
  }
  for (i = 0; i < ((unsigned)(a) % 20u); i++) {
    if ((((u1 | 32767) & 255) == 2)) {
      w5[i & 3] = (32767 + b);
    } else {
      w5[(i + 2) & 3] = w5[i & 3] + 5;
    }
  }
  if (w5[3] > 255) {
    HIT(6) r = 5;
  }
  return r;
}
