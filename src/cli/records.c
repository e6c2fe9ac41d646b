/* mlc records: tools over tuning-record files. `mlc records merge a.json b.json .. -o out.json` keeps, for
 * every (target, task workload), the best valid record of all the files (e.g. from `mlc tune --task-shard`
 * runs on several machines); out.json is written atomically. */
#include <stdio.h>
#include <string.h>
#include "autotvm/autotvm.h"
#include "cli/cli.h"

#define PROG "mlc records"

static const char *records_usage = "usage: mlc records merge a.json b.json ... -o out.json [--json]\n";

int cmd_records(int argc, char **argv) {
  const char *files[256], *out = NULL, *sub = NULL;
  int nfiles = 0;
  bool json = false;
  ArgIter it;
  arg_init(&it, argc, argv);
  while (arg_more(&it)) {
    const char *v;
    if (arg_flag(&it, "--json")) json = true;
    else if (arg_flag(&it, "--help") || arg_flag(&it, "-h")) {
      fputs(records_usage, stdout);
      return 0;
    } else if (arg_value(&it, "--output", &v) || arg_value(&it, "-o", &v)) out = v;
    else if (arg_positional(&it, &v)) {
      if (!sub) sub = v;
      else if (nfiles < 256) files[nfiles++] = v;
      else snprintf(it.error, sizeof it.error, "too many files");
    } else arg_unknown(&it);
  }
  if (!it.error[0] && (!sub || strcmp(sub, "merge"))) snprintf(it.error, sizeof it.error, "expected 'merge'");
  if (!it.error[0] && !nfiles) snprintf(it.error, sizeof it.error, "no records files given");
  if (!it.error[0] && !out) snprintf(it.error, sizeof it.error, "no -o out.json given");
  if (it.error[0]) {
    fputs(records_usage, stderr);
    fprintf(stderr, PROG ": %s\n", it.error);
    if (json) cli_json_error(stdout, "records", MLC_ERR_USAGE, it.error);
    return MLC_ERR_USAGE;
  }
  Diag d = {0};
  int kept = 0, nread = 0;
  if (tune_records_merge(nfiles, files, out, &kept, &nread, &d) != MLC_OK) {
    fprintf(stderr, PROG ": %s\n", d.msg);
    if (json) cli_json_error(stdout, "records", d.status, d.msg);
    return d.status;
  }
  if (json) {
    cli_json_begin(stdout, "records");
    printf(",\"output\":");
    cli_json_string(stdout, out);
    printf(",\"read\":%d,\"kept\":%d}\n", nread, kept);
  } else {
    printf("merged %d records from %d files: %d best records -> %s\n", nread, nfiles, kept, out);
  }
  return 0;
}
