/* src/cli/args: iteration over "--name value" / "--name=value" options, shared by the mlc commands. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"

void arg_init(ArgIter *it, int argc, char **argv) {
  it->argc = argc;
  it->argv = argv;
  it->i = 1;
  it->error[0] = '\0';
}

bool arg_more(const ArgIter *it) { return it->i < it->argc && !it->error[0]; }

bool arg_flag(ArgIter *it, const char *name) {
  if (!arg_more(it) || strcmp(it->argv[it->i], name) != 0) return false;
  it->i++;
  return true;
}

bool arg_value(ArgIter *it, const char *name, const char **value) {
  if (!arg_more(it)) return false;
  const char *a = it->argv[it->i];
  size_t n = strlen(name);
  if (strncmp(a, name, n) != 0) return false;
  if (a[n] == '=') {
    *value = a + n + 1;
    it->i++;
    return true;
  }
  if (a[n] != '\0') return false;
  if (it->i + 1 >= it->argc) {
    snprintf(it->error, sizeof it->error, "option %s needs a value", name);
    it->i++;
    return true;
  }
  *value = it->argv[it->i + 1];
  it->i += 2;
  return true;
}

bool parse_int(const char *s, long long lo, long long hi, long long *out) {
  if (!s || !*s) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < lo || v > hi) return false;
  *out = v;
  return true;
}

bool arg_int(ArgIter *it, const char *name, long long lo, long long hi, long long *value) {
  const char *v = NULL;
  if (!arg_value(it, name, &v)) return false;
  if (it->error[0]) return true;
  if (!parse_int(v, lo, hi, value))
    snprintf(it->error, sizeof it->error, "%s: expected an integer in [%lld, %lld], got '%.100s'", name, lo, hi, v);
  return true;
}

bool arg_positional(ArgIter *it, const char **value) {
  if (!arg_more(it)) return false;
  const char *a = it->argv[it->i];
  if (a[0] == '-' && a[1] != '\0') return false;
  *value = a;
  it->i++;
  return true;
}

void arg_unknown(ArgIter *it) {
  if (!arg_more(it)) return;
  snprintf(it->error, sizeof it->error, "unknown option '%.200s'", it->argv[it->i]);
  it->i++;
}

void cli_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
    else if (*c == '\n') fputs("\\n", f);
    else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
    else fputc(*c, f);
  }
  fputc('"', f);
}

void cli_json_begin(FILE *f, const char *command) {
  fputs("{\"command\":", f);
  cli_json_string(f, command);
  fputs(",\"status\":\"ok\"", f);
}

int cli_json_error(FILE *f, const char *command, int exit_code, const char *msg) {
  fputs("{\"command\":", f);
  cli_json_string(f, command);
  fprintf(f, ",\"status\":\"error\",\"exit_code\":%d,\"error\":", exit_code);
  cli_json_string(f, msg ? msg : "");
  fputs("}\n", f);
  fflush(f);
  return exit_code;
}
