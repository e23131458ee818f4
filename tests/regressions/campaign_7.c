#include <stdlib.h>
void target_7(void);
static void quit(int c) { exit(c); }
int f(short a) {
  int r = 0;
  switch (a) {
  case -1:
    quit(2);
    target_7();
  }
  return r;
}
