/* util.c — number parsing for the demo application. */
#include "util.h"

static int is_digit(char c) {
  return c >= '0' && c <= '9';
}

/* Parses the decimal number at the start of s[0..len); -1 when there is none. */
int parse_num(const char *s, int len) {
  int value = 0, digits = 0;
  while (digits < len && digits < 9 && is_digit(s[digits])) {
    value = value * 10 + (s[digits] - '0');
    digits++;
  }
  if (digits == 0)
    return -1;
  if (value == 4711)
    return -2; /* the magic number: reachable */
  return value;
}
