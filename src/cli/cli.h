/* src/cli: helpers shared by the mlc commands (argument iteration, JSON strings).
 *
 * Options are "--name value" or "--name=value"; flags are "--name". A command loops while arg_more(), tries
 * each of its options in turn, takes positionals with arg_positional and finishes with arg_unknown; the first
 * problem is kept in it.error and stops the loop:
 *
 *   ArgIter it;
 *   arg_init(&it, argc, argv);               // argv[0] is the command name
 *   while (arg_more(&it)) {
 *     const char *v;
 *     if (arg_flag(&it, "--json")) json = true;
 *     else if (arg_value(&it, "--output", &v)) out = v;
 *     else if (arg_int(&it, "--repeat", 1, 1000000, &repeat)) {}
 *     else if (arg_positional(&it, &v)) model = v;
 *     else arg_unknown(&it);
 *   }
 *   if (it.error[0]) { fprintf(stderr, "mlc run: error: %s\n", it.error); return MLC_ERR_USAGE; } */
#ifndef MLC_CLI_H
#define MLC_CLI_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct ArgIter {
  int argc;
  char **argv;
  int i;           /* next argument */
  char error[512]; /* first problem, "" if none */
} ArgIter;

void arg_init(ArgIter *it, int argc, char **argv);
/* true while arguments remain and no error has happened */
bool arg_more(const ArgIter *it);
/* "--name": consumes it */
bool arg_flag(ArgIter *it, const char *name);
/* "--name value" or "--name=value": consumes it and sets *value; a missing value sets it->error */
bool arg_value(ArgIter *it, const char *name, const char **value);
/* like arg_value with a strict integer in [lo, hi] */
bool arg_int(ArgIter *it, const char *name, long long lo, long long hi, long long *value);
/* an argument that is not an option ("-" alone counts as positional) */
bool arg_positional(ArgIter *it, const char **value);
/* consumes the current argument as an error: "unknown option '--x'" */
void arg_unknown(ArgIter *it);
/* strict integer parse: the whole string, base 10, within [lo, hi] */
bool parse_int(const char *s, long long lo, long long hi, long long *out);

/* writes s as a JSON string literal */
void cli_json_string(FILE *f, const char *s);
/* With --json, every command prints exactly one JSON object on one line to stdout, success or not. Its first
 * fields are always "command" (load, compile, run, tune) and "status" ("ok" or "error"); an error object adds
 * "exit_code" (the process exit code) and "error" (the message, also written to stderr). */
void cli_json_begin(FILE *f, const char *command); /* writes {"command":"...","status":"ok" */
int cli_json_error(FILE *f, const char *command, int exit_code, const char *msg); /* returns exit_code */

/* Reads the ONNX model with --input-shapes SPEC and --freeze-inputs FILE.npz (each may be NULL); import.c */
typedef struct Arena Arena;
typedef struct Graph Graph;
typedef struct Diag Diag;
int cli_import_model(Arena *a, const char *model, const char *shapes, const char *freeze, Graph **g, Diag *d);

#endif
