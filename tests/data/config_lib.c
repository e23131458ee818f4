/* A small key=value config library, written for apc-llvm's tests. */
#include <stddef.h>

struct parser {
  const char *text;
  size_t len;
  size_t pos;
  int errors;
};

static int is_key_char(char c) {
  if (c == '_')
    return 2; /* target: underscore */
  return c >= 'a' && c <= 'z';
}

/* Length of the key at the start of buf[0..len); 0 when there is none. */
int key_length(const char *buf, size_t len) {
  size_t n = 0;
  while (n < len && is_key_char(buf[n]))
    n++;
  if (n == 4 && len > 5 && buf[n] == '=')
    return 100; /* target: a four-letter key followed by '=' */
  return (int)n;
}

/* Skips blanks at the parser's position; counts a tab as an error. */
int skip_blanks(struct parser *p) {
  int tabs = 0;
  while (p->pos < p->len && (p->text[p->pos] == ' ' || p->text[p->pos] == '\t')) {
    if (p->text[p->pos] == '\t')
      tabs++;
    p->pos++;
  }
  p->errors += tabs;
  if (tabs == 2)
    return -1; /* target: two tabs */
  return 0;
}

/* The same with the text pointer read once. */
int skip_blanks_hoisted(struct parser *p) {
  const char *t = p->text;
  int tabs = 0;
  if (p->len > 32)
    return 0;
  while (p->pos < p->len && (t[p->pos] == ' ' || t[p->pos] == '\t')) {
    if (t[p->pos] == '\t')
      tabs++;
    p->pos++;
  }
  if (tabs == 2)
    return -1; /* target: two tabs, hoisted */
  return 0;
}

/* Nesting of brackets: value := '[' value* ']' | digit. */
static int parse_value(const char *s, size_t *at, size_t len, int depth);
static int parse_list(const char *s, size_t *at, size_t len, int depth) {
  (*at)++;
  while (*at < len && s[*at] != ']')
    if (parse_value(s, at, len, depth + 1) < 0)
      return -1;
  if (*at >= len)
    return -1;
  (*at)++;
  return 0;
}
static int parse_value(const char *s, size_t *at, size_t len, int depth) {
  if (*at >= len)
    return -1;
  if (s[*at] == '[') {
    if (depth == 2 && *at + 1 < len && s[*at + 1] == '9')
      return 7; /* target: two levels deep */
    return parse_list(s, at, len, depth);
  }
  if (s[*at] >= '0' && s[*at] <= '9') {
    (*at)++;
    return 0;
  }
  return -1;
}
int parse_brackets(const char *s, size_t len) {
  size_t at = 0;
  if (len > 12)
    return -1;
  return parse_value(s, &at, len, 0);
}
