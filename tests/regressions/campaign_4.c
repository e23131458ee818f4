#ifndef HIT
#define HIT(k)
#endif
int f(unsigned char a, unsigned char b) {
  unsigned char oa1[4] = {0};
  unsigned char ob2[8] = {0};
  int r = 0;
  if (ob2 + 8 == oa1) {
    HIT(3) r = 17;
  }
  return r;
}
