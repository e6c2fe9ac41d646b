/* The cost model: gradient-boosted trees through libxgboost's C API (TVM's XGBoostCostModel).
 *
 * Trained on the features of the configs measured so far with a ranking objective (rank:pairwise: only the
 * order of configs matters, and only within a query group, one per task), labels their throughput relative
 * to the best of their task (0 for failed configs); predictions rank candidates. Every xgboost -1 becomes an mlc status with XGBGetLastError's text. */
#include <stdio.h>
#include <stdlib.h>
#include <xgboost/c_api.h>
#include "autotvm/autotvm.h"

#define ROUNDS 40

struct TuneXgb {
  BoosterHandle booster;
};

static mlc_status xgb_err(Diag *d, const char *what) {
  return diag_set(d, MLC_ERR_INTERNAL, "xgboost: %s: %s", what, XGBGetLastError());
}

mlc_status tune_xgb_fit(int n, int nf, const float *x, const float *y, int ngroups, const unsigned *groups,
                        uint64_t seed, TuneXgb **out, Diag *d) {
  DMatrixHandle dm = NULL;
  BoosterHandle b = NULL;
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)nf, -1e30f, &dm)) return xgb_err(d, "DMatrix");
  unsigned one = (unsigned)n;
  if (ngroups < 1) groups = &one, ngroups = 1;
  char seed_s[32];
  snprintf(seed_s, sizeof seed_s, "%llu", (unsigned long long)(seed % 2147483647ULL));
  if (XGDMatrixSetFloatInfo(dm, "label", y, (bst_ulong)n) ||
      XGDMatrixSetUIntInfo(dm, "group", groups, (bst_ulong)ngroups) ||
      XGBoosterCreate(&dm, 1, &b) || XGBoosterSetParam(b, "objective", "rank:pairwise") ||
      XGBoosterSetParam(b, "max_depth", "3") || XGBoosterSetParam(b, "eta", "0.3") ||
      XGBoosterSetParam(b, "gamma", "0.0001") || XGBoosterSetParam(b, "min_child_weight", "1") ||
      XGBoosterSetParam(b, "lambda", "1") || XGBoosterSetParam(b, "nthread", "1") ||
      XGBoosterSetParam(b, "seed", seed_s) || XGBoosterSetParam(b, "verbosity", "0")) {
    xgb_err(d, "setup");
    if (b) XGBoosterFree(b);
    XGDMatrixFree(dm);
    return d->status;
  }
  for (int it = 0; it < ROUNDS; it++)
    if (XGBoosterUpdateOneIter(b, it, dm)) {
      xgb_err(d, "training");
      XGBoosterFree(b);
      XGDMatrixFree(dm);
      return d->status;
    }
  XGDMatrixFree(dm);
  TuneXgb *m = malloc(sizeof *m);
  if (!m) {
    XGBoosterFree(b);
    return diag_set(d, MLC_ERR_INTERNAL, "out of memory");
  }
  m->booster = b;
  *out = m;
  return MLC_OK;
}

mlc_status tune_xgb_predict(TuneXgb *m, int n, int nf, const float *x, float *out, Diag *d) {
  DMatrixHandle dm = NULL;
  if (XGDMatrixCreateFromMat(x, (bst_ulong)n, (bst_ulong)nf, -1e30f, &dm)) return xgb_err(d, "DMatrix");
  bst_ulong len = 0;
  const float *res = NULL;
  if (XGBoosterPredict(m->booster, dm, 0, 0, 0, &len, &res) || (int)len != n) {
    XGDMatrixFree(dm);
    return xgb_err(d, "predict");
  }
  for (int i = 0; i < n; i++) out[i] = res[i];
  XGDMatrixFree(dm);
  return MLC_OK;
}

void tune_xgb_free(TuneXgb *m) {
  if (!m) return;
  XGBoosterFree(m->booster);
  free(m);
}
