/* autotvm: AutoTVM-style template tuning (after TVM's python/tvm/autotvm).
 *
 *   tasks.c     task extraction: the graph passes and FuseOps as `mlc compile` runs them, then one task per
 *               distinct (template, workload) of the fused groups' anchors; apply-history-best for compile
 *   space.c     config spaces: a config's index is the mixed-radix number of its knobs' choice positions
 *               (knob 0 fastest, as TVM's ConfigSpace); a hash set of indices
 *   features.c  loop features of the lowered TIR of a config (TVM's itervar features, simplified)
 *   measure.c   build + run each config in a forked child with a timeout, check it against the default
 *               schedule's output on random inputs, time it (number / repeat / min-repeat-ms; the cost is
 *               the fastest repeat, which noisy neighbours on the machine can only slow down)
 *   records.c   one JSON line per measurement (TVM's record format, version 0.2); load, best, merge
 *   xgb.c       the XGBoost cost model (libxgboost C API, rank:pairwise)
 *   tuner_*.c   random, grid, genetic and model-based (XGBoost + simulated annealing) tuners
 *   tune.c      the tuning loop of one task, and the SVG plot of tuning curves
 * The tuner drives the compile path (driver) for one group at a time; nothing below calls back up here. */
#ifndef MLC_AUTOTVM_H
#define MLC_AUTOTVM_H
#include "driver/driver.h"

/* ---- tasks.c ---- */
typedef struct TuneTask {
  int index;
  const char *name;        /* the template: "conv2d_nchw.x86" */
  const char *args;        /* workload, JSON: [["TENSOR", [1, 3, 224, 224], "float32"], ...] (inputs, output) */
  const char *kwargs;      /* JSON object: the anchor node's attributes */
  const char *key;         /* name + args + kwargs: the task's identity in dedupe and records */
  const FusedGroup *group; /* the first group with this workload: the one measured */
  int ngroups;             /* groups sharing the workload */
  TopiConfigSpace space;
  int64_t space_size;
  int64_t default_index; /* the template's fallback config in the space; -1 when it is not one of its points */
  double flops; /* of the anchor: 2 x output elements x reduce extent */
} TuneTask;

typedef struct TuneTasks {
  Arena *arena;
  Graph *graph;
  Target target;
  FusedGraph groups;
  VEC(TuneTask) tasks;
} TuneTasks;

/* Runs the graph passes and FuseOps of opt on g, then extracts the tunable tasks (a template with more than one
 * config). */
mlc_status tune_extract_tasks(Arena *a, Graph *g, const CompileOptions *opt, TuneTasks *out, Diag *d);
/* The workload of a group given its TE outputs: false when it has no tunable anchor. Fills every TuneTask
 * field but index, group and ngroups. */
bool tune_group_workload(Arena *a, const Target *t, const Graph *g, const FusedGroup *grp, TeCtx *tc, int nout,
                         TeTensor **outs, TuneTask *task);

/* apply-history-best: the CompileOptions.pick_config of `mlc compile --tuning-records` */
typedef struct TuneRecords TuneRecords;
typedef struct TuneApply {
  const TuneRecords *records;
  const char *target; /* the full target string records must match */
  Arena *arena;
  TopiConfig cfg;       /* the last config handed out */
  VEC(char *) report;   /* one line per task seen: record used or default */
  VEC(const char *) seen_keys;
} TuneApply;
const TopiConfig *tune_apply_pick(void *user, TeCtx *tc, const Graph *g, const FusedGroup *grp, int nout,
                                  TeTensor **outs);
/* conv_block.c: the CompileOptions.conv_block of --tuning-records: the tile_oc knob of the best valid
 * conv2d_packed.x86 record whose conv (data N, C, H, W, output channels, kernel, strides, padding, dilation,
 * whatever its layout attributes) is nn.conv2d node conv; 0 when none */
int64_t tune_apply_conv_block(void *user, const Node *conv);

/* ---- space.c ---- */
int64_t tune_space_size(const TopiConfigSpace *s); /* saturates at INT64_MAX / 2 */
void tune_config_from_index(const TopiConfigSpace *s, int64_t index, TopiConfig *cfg);
void tune_index_digits(const TopiConfigSpace *s, int64_t index, int *digits); /* choice position per knob */
int64_t tune_index_from_digits(const TopiConfigSpace *s, const int *digits);
/* -1 when a knob with several choices is missing or a value is not one of its knob's choices */
int64_t tune_index_from_config(const TopiConfigSpace *s, const TopiConfig *cfg);

typedef struct TuneIndexSet {
  int64_t *slots; /* open addressing, -1 empty */
  int cap, n;
} TuneIndexSet;
bool tune_set_has(const TuneIndexSet *s, int64_t v);
bool tune_set_add(TuneIndexSet *s, int64_t v); /* true when new */
void tune_set_free(TuneIndexSet *s);

/* splitmix64: the one random generator, so a --seed reproduces a run */
uint64_t tune_rand(uint64_t *state);
int64_t tune_rand_below(uint64_t *state, int64_t n); /* [0, n) */
double tune_rand_unit(uint64_t *state);              /* [0, 1) */

/* ---- features.c ---- */
#define TUNE_FEATURE_LOOPS 10
#define TUNE_FEATURE_BUFS 4
#define TUNE_NFEATURES (TUNE_FEATURE_LOOPS * (6 + TUNE_FEATURE_BUFS) + 13)
/* Features of one kernel: the loop nest around its heaviest store (innermost first: log2 extent, kind one-hot,
 * log2 stride of each buffer access, log2 iterations below), and counts of arithmetic, loads and stores. */
void tune_features(const TirFunc *f, float *out);
/* the features of config index of task (lowered in a scratch arena); false when it does not lower */
bool tune_config_features(const TuneTasks *ts, const TuneTask *task, int64_t index, float *out);
/* a hash of the lowered kernel of config index (its printed TIR): configs that differ only in knobs their
 * schedule ignores (prefetch where the loop order is not 0) lower to the same kernel; 0 when it does not lower */
uint64_t tune_config_kernel_hash(const TuneTasks *ts, const TuneTask *task, int64_t index);

/* ---- measure.c ---- */
typedef enum TuneErrorNo { /* TVM's MeasureErrorNo */
  TUNE_NO_ERROR = 0,
  TUNE_ERR_INSTANTIATION = 1, /* the schedule does not lower */
  TUNE_ERR_COMPILE_HOST = 2,  /* LLVM failed */
  TUNE_ERR_COMPILE_DEVICE = 3,
  TUNE_ERR_RUNTIME = 4,       /* the kernel returned an error or crashed */
  TUNE_ERR_WRONG_ANSWER = 5,  /* differs from the default schedule's output */
  TUNE_ERR_BUILD_TIMEOUT = 6,
  TUNE_ERR_RUN_TIMEOUT = 7,
  TUNE_ERR_UNKNOWN = 8,
} TuneErrorNo;

#define TUNE_MAX_REPEAT 16
typedef struct MeasureOptions {
  int number;        /* runs per repeat (grown until a repeat takes min_repeat_ms) */
  int repeat;        /* costs recorded */
  int min_repeat_ms;
  double timeout;    /* seconds for the build and for the run of one config */
  int threads;       /* the kernel's thread pool (0: the runtime default) */
  int parallel;      /* configs built at once (timed one at a time) */
  bool cache_flush;  /* flush every buffer but the first input from the caches before each timed run */
  uint64_t seed;     /* random inputs */
} MeasureOptions;

typedef struct MeasureResult {
  int ncosts;
  double costs[TUNE_MAX_REPEAT]; /* seconds per run */
  int error_no;
  double all_cost;  /* seconds: build + run */
  double timestamp; /* unix time when measured */
  char msg[200];
} MeasureResult;

typedef struct Measurer Measurer;
/* Sets up random inputs and the reference output (the default schedule, run in a child too). */
mlc_status tune_measurer_new(const TuneTasks *ts, const TuneTask *task, const MeasureOptions *o, Measurer **out,
                             Diag *d);
void tune_measure_batch(Measurer *m, int n, const int64_t *indices, MeasureResult *res);
void tune_measurer_free(Measurer *m);
/* The default schedule's measurement at setup (error_no set when it failed; tuning goes on all the same). */
const MeasureResult *tune_measurer_default(const Measurer *m);
/* Measures the default schedule again (for a comparison with the best config under the same load). */
void tune_measure_default(Measurer *m, MeasureResult *res);
/* The cost of a result: its fastest repeat (load from other processes only ever slows a run down, so the
 * minimum is the estimate least disturbed by it); 1e9 if it failed. */
double tune_result_cost(const MeasureResult *r);
/* CLOCK_MONOTONIC seconds: the clock of time budgets */
double tune_clock(void);

/* ---- records.c ---- */
typedef struct TuneRecord {
  const char *target, *task, *key;
  int64_t index;
  TopiConfig config; /* the entity */
  double cost;       /* the fastest of its costs (1e9 when error_no != 0) */
  int error_no;
  double all_cost, timestamp;
  const char *line; /* the JSON line as read */
} TuneRecord;
struct TuneRecords {
  VEC(TuneRecord) v;
};
/* Reads a records file; lines that are not records are counted in *nbad and skipped. */
mlc_status tune_records_load(Arena *a, const char *path, TuneRecords *out, int *nbad, Diag *d);
/* The record line of one measurement (malloc'd, no newline). */
char *tune_record_line(const char *target, const TuneTask *t, int64_t index, const TopiConfig *cfg,
                       const MeasureResult *r);
/* the best valid record for (target, key), NULL if none */
const TuneRecord *tune_records_best(const TuneRecords *r, const char *target, const char *key);
/* merge: the best valid record of each (target, key) of every file, written to out (atomically) */
mlc_status tune_records_merge(int nfiles, const char *const *files, const char *out, int *nkept, int *nread,
                              Diag *d);

/* ---- xgb.c ---- */
typedef struct TuneXgb TuneXgb;
/* rows x[n][nf] labelled y, in ngroups query groups of groups[i] consecutive rows (ngroups 0: one group) */
mlc_status tune_xgb_fit(int n, int nf, const float *x, const float *y, int ngroups, const unsigned *groups,
                        uint64_t seed, TuneXgb **out, Diag *d);
mlc_status tune_xgb_predict(TuneXgb *m, int n, int nf, const float *x, float *out, Diag *d);
void tune_xgb_free(TuneXgb *m);

/* ---- tuner_xgb.c: what one session's tuners measured, for the xgb tuner's transfer learning (TVM's
 * tune_tasks with use_transfer_learning): per measurement its template, task, loop features and GFLOP/s ---- */
typedef struct TuneHistory {
  int n, cap;
  const char **tmpl;
  int *task;
  float *feats; /* n x TUNE_NFEATURES */
  double *gflops;
} TuneHistory;
void tune_history_free(TuneHistory *h);

/* ---- tuner_*.c: a tuner proposes configs and learns from their results ---- */
typedef struct Tuner Tuner;
struct Tuner {
  const char *kind;
  const TuneTasks *tasks;
  const TuneTask *task;
  TuneHistory *history; /* the session's measurements of earlier tasks (NULL: none); xgb adds its own */
  int transferred;      /* the most history measurements of other tasks a model of this task learned from */
  uint64_t rng;
  TuneIndexSet visited; /* proposed or measured */
  /* fills out with up to n unvisited indices (marking them visited); returns how many (0: space exhausted) */
  int (*next_batch)(Tuner *t, int n, int64_t *out);
  void (*update)(Tuner *t, int n, const int64_t *idx, const MeasureResult *res);
  void (*free)(Tuner *t);
  void *state;
  Diag diag; /* a model failure is noted here; the tuner falls back to random proposals */
};
/* kind: random | grid | ga | xgb */
Tuner *tune_tuner_new(const char *kind, const TuneTasks *ts, const TuneTask *task, uint64_t seed, Diag *d);
void tune_tuner_free(Tuner *t);
int tune_random_batch(Tuner *t, int n, int64_t *out); /* unvisited random indices (tuner_random.c) */

/* ---- tune.c ---- */
typedef struct TuneSummary TuneSummary;
typedef struct TuneOptions {
  const char *tuner;
  int trials;         /* per task, records already measured included */
  int early_stopping; /* stop after this many trials without a better config (0: never) */
  double deadline;    /* tune_clock() time after which no new batch starts (0: none) */
  int remeasure;      /* at the end, the best this many configs and the default measured again (0: none) */
  MeasureOptions measure;
  uint64_t seed;
  const TuneRecords *prior; /* --tuning-records: measured already, skipped */
  /* --replay: nothing is built or timed; a config's result is its best record here (an error when it has
   * none), the default's that of the fallback config. Compares tuners on the same costs, free of noise. */
  const TuneRecords *replay;
  TuneHistory *history;     /* shared by the session's tasks: the xgb tuner learns from earlier tasks (NULL: not) */
  FILE *log;                /* records are appended and flushed here */
  /* called after each measured batch and once when the task is done */
  void (*progress)(void *user, const TuneTask *t, const TuneSummary *s, double elapsed, bool done);
  void *progress_user;
} TuneOptions;

typedef struct TuneCurve {
  int n;
  double *best_gflops; /* after each trial */
} TuneCurve;

struct TuneSummary {
  int trials, measured, errors, resumed;
  int twins;        /* configs proposed whose kernel is one measured already: not built, timed or counted */
  int remeasured;   /* extra measurements of configs measured already (records too; not trials) */
  double best_cost; /* seconds, 1e9 if none valid */
  int64_t best_index;
  double default_cost;  /* seconds, the fastest measurement of the default schedule or of the same config in the
                         * space (the fallback); 1e9 when it never measured (unknown) */
  int default_error;    /* error_no of the default's first measurement (0: it measured) */
  bool out_of_time;     /* stopped at the deadline before the trials or the space were done */
  int transferred;      /* measurements of earlier tasks the tuner's model learned from (xgb) */
  double seconds;       /* wall time of the task */
  TuneCurve curve;
};

mlc_status tune_task_run(Arena *a, const TuneTasks *ts, const TuneTask *task, const TuneOptions *o, TuneSummary *sum,
                         Diag *d);
/* draws each task's best GFLOP/s against trials */
mlc_status tune_plot_svg(const char *path, int ntasks, const TuneTask *const *tasks, const TuneCurve *curves,
                         Diag *d);

#endif
