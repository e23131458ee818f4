/* app.c — a level setting parsed from text, checked against its limits. */
#include <stdio.h>
#include <stdlib.h>
#include "util.h"

int set_level(const char *text, int len) {
  int level = parse_num(text, len);
  if (level == -2)
    return 99; /* the magic number */
  if (level < 0 || level > 100)
    return -1;
  if (level > 100)
    abort(); /* never: checked just above */
  return level;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return 1;
  int n = 0;
  while (argv[1][n])
    n++;
  printf("%d\n", set_level(argv[1], n));
  return 0;
}
