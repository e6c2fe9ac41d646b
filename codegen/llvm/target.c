/* codegen/llvm/target.c: parses tvmc-style target strings into the Target description, and creates LLVM
 * target machines from it.
 *
 * Grammar: KIND { -OPTION=VALUE }, KIND in {llvm, cuda, nvptx}; options -mtriple, -mcpu, -mattr, -opt-level,
 * -num-cores (and -arch as an alias of -mcpu for cuda). "llvm" alone means the host: default triple, host CPU
 * name and host feature string from LLVM. The widest vector register comes from the explicit feature string
 * (+avx512f / +avx2 / +avx), else from a table of known CPUs. Cache sizes come from sysfs for the host CPU and
 * default to L1 32K / L2 1M / L3 32M otherwise. An unknown triple is rejected through
 * LLVMGetTargetFromTriple; an unknown CPU or feature is rejected by building the target machine and catching
 * the "is not a recognized processor/feature" warning that LLVM's MCSubtargetInfo writes to stderr (the C API
 * has no other way to query the CPU list). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "codegen/llvm/cg_internal.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;

static void init_llvm_once(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64AsmPrinter();
  LLVMInitializeNVPTXTargetInfo();
  LLVMInitializeNVPTXTarget();
  LLVMInitializeNVPTXTargetMC();
  LLVMInitializeNVPTXAsmPrinter();
}

void cg_init_llvm(void) { pthread_once(&init_once, init_llvm_once); }

/* x86 CPUs by widest vector register (LLVM's names). */
static const char *const x86_avx512[] = {
    "skylake-avx512", "cascadelake", "cooperlake", "cannonlake", "icelake-client", "icelake-server",
    "tigerlake", "rocketlake", "sapphirerapids", "emeraldrapids", "graniterapids", "graniterapids-d",
    "diamondrapids", "znver4", "znver5", "x86-64-v4", "knl", "knm",
};
static const char *const x86_avx[] = {
    "haswell", "broadwell", "skylake", "alderlake", "raptorlake", "meteorlake", "arrowlake", "arrowlake-s",
    "lunarlake", "pantherlake", "gracemont", "sierraforest", "grandridge", "clearwaterforest", "znver1",
    "znver2", "znver3", "x86-64-v3", "bdver1", "bdver2", "bdver3", "bdver4", "btver2", "sandybridge",
    "ivybridge", "core-avx2", "core-avx-i", "corei7-avx",
};

/* x86 CPUs with u8 x s8 dot products (vpdpbusd): AVX512-VNNI on 512-bit vectors, AVX-VNNI on 256-bit */
static const char *const x86_avx512vnni[] = {
    "cascadelake", "cooperlake", "icelake-client", "icelake-server", "tigerlake", "rocketlake", "sapphirerapids",
    "emeraldrapids", "graniterapids", "graniterapids-d", "diamondrapids", "znver4", "znver5",
};
static const char *const x86_avxvnni[] = {
    "alderlake", "raptorlake", "meteorlake", "arrowlake", "arrowlake-s", "lunarlake", "pantherlake",
    "gracemont", "sierraforest", "grandridge", "clearwaterforest",
};

static bool in_list(const char *s, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(s, list[i])) return true;
  return false;
}

/* Scans a comma-separated feature list for +f / -f; returns +1, -1 or 0 (last mention wins). */
static int feature_state(const char *features, const char *name) {
  int st = 0;
  size_t nl = strlen(name);
  for (const char *p = features; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == nl + 1 && (p[0] == '+' || p[0] == '-') && !strncmp(p + 1, name, nl)) st = p[0] == '+' ? 1 : -1;
    p += len;
    if (*p == ',') p++;
  }
  return st;
}

static int vector_bytes_for(const Target *t) {
  if (t->arch != ARCH_X86_64) return 16;
  int vb = 16;
  if (in_list(t->cpu, x86_avx512, countof(x86_avx512)))
    vb = 64;
  else if (in_list(t->cpu, x86_avx, countof(x86_avx)))
    vb = 32;
  int avx512 = feature_state(t->features, "avx512f");
  int avx2 = feature_state(t->features, "avx2"), avx = feature_state(t->features, "avx");
  if (avx512 > 0) vb = 64;
  if (avx512 < 0 && vb > 32) vb = 32;
  if ((avx2 > 0 || avx > 0) && vb < 32) vb = 32;
  if (avx < 0) vb = 16;
  return vb;
}

/* the int32 lanes of one vpdpbusd on the target's vectors (its CPU's or -mattr's VNNI), 0 without one */
static int dot_i8_lanes_for(const Target *t) {
  if (t->arch != ARCH_X86_64) return 0;
  int v512 = feature_state(t->features, "avx512vnni"), v256 = feature_state(t->features, "avxvnni");
  bool has512 = v512 > 0 || (v512 == 0 && in_list(t->cpu, x86_avx512vnni, countof(x86_avx512vnni)));
  bool has256 = v256 > 0 || (v256 == 0 && in_list(t->cpu, x86_avxvnni, countof(x86_avxvnni)));
  if (t->vector_bytes == 64 && has512) return 16;
  if (t->vector_bytes == 32 && has256) return 8;
  return 0;
}

/* "48K", "2048K", "32M" -> bytes; 0 if unparsable. */
static int parse_cache_size(const char *s) {
  char *end;
  long v = strtol(s, &end, 10);
  if (end == s || v <= 0) return 0;
  if (*end == 'K') v *= 1024;
  else if (*end == 'M') v *= 1024 * 1024;
  else if (*end == 'G') v *= 1024L * 1024 * 1024;
  return v > 0x7fffffff ? 0x7fffffff : (int)v;
}

static bool read_small_file(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  size_t n = fread(buf, 1, cap - 1, f);
  fclose(f);
  buf[n] = 0;
  while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
  return n > 0;
}

static void default_caches(Target *t) {
  t->l1_bytes = 32 * 1024;
  t->l2_bytes = 1024 * 1024;
  t->l3_bytes = 32 * 1024 * 1024;
}

static void host_caches(Target *t) {
  for (int i = 0; i < 16; i++) {
    char path[128], level[16], type[32], size[32];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
    if (!read_small_file(path, level, sizeof level)) break;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
    if (!read_small_file(path, type, sizeof type)) continue;
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
    if (!read_small_file(path, size, sizeof size)) continue;
    int bytes = parse_cache_size(size);
    if (!bytes || !strcmp(type, "Instruction")) continue;
    int lv = atoi(level);
    if (lv == 1) t->l1_bytes = bytes;
    else if (lv == 2) t->l2_bytes = bytes;
    else if (lv == 3) t->l3_bytes = bytes;
  }
}

static bool copy_field(char *dst, size_t cap, const char *src, size_t len) {
  if (len >= cap) return false;
  memcpy(dst, src, len);
  dst[len] = 0;
  return true;
}

/* The host's cpu name, enabled features and data caches, read once per process: LLVM's host queries run
 * CPUID and build long strings, host_caches reads sysfs, and one compile parses a target several times
 * (constant folding compiles once per folded shape value: Swin-T's importer folds 2092). */
static struct {
  char cpu[64];
  char features[512]; /* "+avx2,+fma,...": only the enabled ones when the full list does not fit */
  Target caches;      /* l1_bytes, l2_bytes, l3_bytes */
} host_info;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;

static void read_host_once(void) {
  char *hcpu = LLVMGetHostCPUName();
  copy_field(host_info.cpu, sizeof host_info.cpu, hcpu, strlen(hcpu));
  LLVMDisposeMessage(hcpu);
  char *hf = LLVMGetHostCPUFeatures();
  if (!copy_field(host_info.features, sizeof host_info.features, hf, strlen(hf))) {
    /* Keep only the enabled features: LLVM lists every known one with +/-; the disabled ones are implied. */
    size_t n = 0;
    for (char *tok = strtok(hf, ","); tok; tok = strtok(NULL, ",")) {
      size_t l = strlen(tok);
      if (tok[0] != '+' || n + l + 2 > sizeof host_info.features) continue;
      if (n) host_info.features[n++] = ',';
      memcpy(host_info.features + n, tok, l);
      n += l;
    }
    host_info.features[n] = 0;
  }
  LLVMDisposeMessage(hf);
  default_caches(&host_info.caches); /* what sysfs does not say */
  host_caches(&host_info.caches);
}

bool cg_target_runs_on_host(const Target *t) {
  Target host;
  Diag d = {0};
  if (t->kind != TARGET_CPU || cg_target_parse("llvm", &host, &d) != MLC_OK || host.arch != t->arch ||
      strcmp(t->cpu, host.cpu))
    return false;
  for (const char *p = t->features; *p;) { /* every feature t enables, the host has */
    size_t len = strcspn(p, ",");
    char name[64];
    if (p[0] == '+' && len - 1 < sizeof name) {
      memcpy(name, p + 1, len - 1);
      name[len - 1] = 0;
      if (feature_state(host.features, name) != 1) return false;
    }
    p += len + (p[len] == ',');
  }
  return true;
}

/* Runs LLVMCreateTargetMachine with stderr redirected to a memory file and returns what LLVM wrote there. */
static LLVMTargetMachineRef create_tm_capture(LLVMTargetRef tgt, const Target *t, LLVMCodeGenOptLevel lv,
                                              LLVMRelocMode reloc, LLVMCodeModel cm, char *warn, size_t cap) {
  warn[0] = 0;
  int mfd = memfd_create("mlc-llvm-stderr", 0);
  int saved = mfd >= 0 ? dup(STDERR_FILENO) : -1;
  if (saved >= 0) {
    fflush(stderr);
    dup2(mfd, STDERR_FILENO);
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(tgt, t->triple, t->cpu, t->features, lv, reloc, cm);
  if (saved >= 0) {
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(mfd, warn, cap - 1, 0);
    warn[n > 0 ? n : 0] = 0;
  }
  if (mfd >= 0) close(mfd);
  return tm;
}

static LLVMCodeGenOptLevel cg_opt_level(int lv) {
  return lv <= 0 ? LLVMCodeGenLevelNone : lv == 1 ? LLVMCodeGenLevelLess : lv == 2 ? LLVMCodeGenLevelDefault
                                                                                    : LLVMCodeGenLevelAggressive;
}

/* validate: catch LLVM's "not a recognized processor/feature" warnings (redirects fd 2 for the duration, so it
 * is done once, when the target string is parsed, not for every module). */
static LLVMTargetMachineRef create_tm(const Target *t, bool for_jit, bool validate, Diag *d) {
  cg_init_llvm();
  LLVMTargetRef tgt;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(t->triple, &tgt, &err)) {
    diag_set(d, MLC_ERR_USAGE, "target '%s': unknown target triple '%s': %s", t->str, t->triple,
             err ? err : "");
    LLVMDisposeMessage(err);
    return NULL;
  }
  char warn[1024] = "";
  LLVMRelocMode reloc = for_jit ? LLVMRelocDefault : LLVMRelocPIC;
  LLVMCodeModel cm = for_jit ? LLVMCodeModelJITDefault : LLVMCodeModelDefault;
  LLVMTargetMachineRef tm =
      validate ? create_tm_capture(tgt, t, cg_opt_level(t->opt_level), reloc, cm, warn, sizeof warn)
               : LLVMCreateTargetMachine(tgt, t->triple, t->cpu, t->features, cg_opt_level(t->opt_level), reloc, cm);
  if (!tm) {
    diag_set(d, MLC_ERR_USAGE, "target '%s': LLVM cannot create a target machine for %s (cpu '%s')", t->str,
             t->triple, t->cpu);
    return NULL;
  }
  if (strstr(warn, "not a recognized processor") || strstr(warn, "not a recognized feature")) {
    size_t n = strlen(warn);
    while (n && isspace((unsigned char)warn[n - 1])) warn[--n] = 0;
    diag_set(d, MLC_ERR_USAGE, "target '%s': %s", t->str, warn);
    LLVMDisposeTargetMachine(tm);
    return NULL;
  }
  if (warn[0]) fputs(warn, stderr); /* anything else LLVM said is not ours to swallow */
  return tm;
}

LLVMTargetMachineRef cg_create_tm(const Target *t, bool for_jit, Diag *d) { return create_tm(t, for_jit, false, d); }

const char *cg_cc_driver(const Target *t) {
#if defined(__aarch64__)
  return "cc";
#else
  return t->arch == ARCH_AARCH64 ? "aarch64-linux-gnu-gcc" : "cc";
#endif
}

static bool host_triple(char *buf, size_t cap) {
  char *def = LLVMGetDefaultTargetTriple();
  char *norm = LLVMNormalizeTargetTriple(def);
  bool ok = copy_field(buf, cap, norm, strlen(norm));
  LLVMDisposeMessage(norm);
  LLVMDisposeMessage(def);
  return ok;
}

const char *cg_target_help(void) {
  return "targets (tvmc-style: KIND {-OPTION=VALUE}):\n"
         "  llvm                      the host CPU (x86-64 or AArch64), its features detected\n"
         "  llvm -mcpu=CPU            x86-64 CPU by LLVM name: znver4, skylake-avx512, haswell, x86-64-v3, ...\n"
         "  llvm -mtriple=aarch64-linux-gnu [-mcpu=neoverse-n1|cortex-a72|...] [-mattr=+neon,...]\n"
         "                            AArch64 (NEON), cross-compiled; linked with aarch64-linux-gnu-gcc\n"
         "  cuda [-arch=sm_90]        NVIDIA GPU: NVPTX kernels as PTX (also: nvptx -mcpu=sm_80)\n"
         "options:\n"
         "  -mtriple=T   target triple (x86_64-*, aarch64-*; nvptx64-nvidia-cuda for cuda)\n"
         "  -mcpu=C      CPU (or GPU architecture sm_NN for cuda/nvptx; -arch is an alias)\n"
         "  -mattr=F     LLVM feature list, e.g. +avx2,+fma or +neon (CPU targets only)\n"
         "  -opt-level=N LLVM optimisation level 0..3 (default 3)\n"
         "  -num-cores=N cores the schedules plan for (default: this machine's)\n";
}

mlc_status cg_target_parse(const char *str, Target *t, Diag *d) {
  cg_init_llvm();
  memset(t, 0, sizeof *t);
  if (!str) return diag_set(d, MLC_ERR_USAGE, "empty target string");
  if (!copy_field(t->str, sizeof t->str, str, strlen(str)))
    return diag_set(d, MLC_ERR_USAGE, "target string too long (%zu characters, at most %zu)", strlen(str),
                    sizeof t->str - 1);
  char kind[32] = "", triple[96] = "", cpu[64] = "", attr[512] = "";
  bool have_triple = false, have_cpu = false, have_attr = false;
  int opt_level = 3, num_cores = 0;
  const char *p = str;
  int ntok = 0;
  while (*p) {
    while (isspace((unsigned char)*p)) p++;
    if (!*p) break;
    const char *s = p;
    while (*p && !isspace((unsigned char)*p)) p++;
    size_t len = (size_t)(p - s);
    if (ntok++ == 0) {
      if (!copy_field(kind, sizeof kind, s, len))
        return diag_set(d, MLC_ERR_USAGE, "target '%s': unknown target kind '%.*s' (expected llvm, cuda or nvptx)",
                        str, (int)len, s);
      continue;
    }
    const char *eq = memchr(s, '=', len);
    if (s[0] != '-' || !eq)
      return diag_set(d, MLC_ERR_USAGE, "target '%s': expected an option -NAME=VALUE, got '%.*s'", str, (int)len, s);
    size_t klen = (size_t)(eq - s), vlen = len - klen - 1;
    const char *val = eq + 1;
#define KEY(name) (klen == strlen(name) && !strncmp(s, name, klen))
    bool ok = true;
    if (KEY("-mtriple")) ok = copy_field(triple, sizeof triple, val, vlen), have_triple = true;
    else if (KEY("-mcpu") || KEY("-arch")) ok = copy_field(cpu, sizeof cpu, val, vlen), have_cpu = true;
    else if (KEY("-mattr")) ok = copy_field(attr, sizeof attr, val, vlen), have_attr = true;
    else if (KEY("-opt-level") || KEY("-num-cores")) {
      char num[16];
      char *end;
      if (!copy_field(num, sizeof num, val, vlen))
        return diag_set(d, MLC_ERR_USAGE, "target '%s': bad value for %.*s", str, (int)klen, s);
      long v = strtol(num, &end, 10);
      if (KEY("-opt-level")) {
        if (*end || end == num || v < 0 || v > 3)
          return diag_set(d, MLC_ERR_USAGE, "target '%s': -opt-level must be 0, 1, 2 or 3, got '%s'", str, num);
        opt_level = (int)v;
      } else {
        if (*end || end == num || v < 1 || v > 4096)
          return diag_set(d, MLC_ERR_USAGE, "target '%s': -num-cores must be a positive integer, got '%s'", str, num);
        num_cores = (int)v;
      }
    } else
      return diag_set(d, MLC_ERR_USAGE,
                      "target '%s': unknown option '%.*s' (known: -mtriple, -mcpu, -mattr, -opt-level, -num-cores)",
                      str, (int)klen, s);
#undef KEY
    if (!ok) return diag_set(d, MLC_ERR_USAGE, "target '%s': value of '%.*s' is too long", str, (int)len, s);
    if (vlen == 0) return diag_set(d, MLC_ERR_USAGE, "target '%s': empty value in '%.*s'", str, (int)len, s);
  }
  if (!kind[0]) return diag_set(d, MLC_ERR_USAGE, "empty target string (expected e.g. \"llvm\" or \"llvm -mcpu=znver4\")");

  t->opt_level = opt_level;
  default_caches(t);
  long nproc = sysconf(_SC_NPROCESSORS_ONLN);
  t->num_cores = num_cores ? num_cores : (nproc > 0 ? (int)nproc : 1);

  if (!strcmp(kind, "cuda") || !strcmp(kind, "nvptx")) {
    if (have_attr) return diag_set(d, MLC_ERR_USAGE, "target '%s': -mattr is not supported for %s", str, kind);
    if (have_triple && strncmp(triple, "nvptx64", 7))
      return diag_set(d, MLC_ERR_USAGE, "target '%s': a %s target needs an nvptx64 triple, got '%s'", str, kind,
                      triple);
    t->kind = TARGET_GPU;
    t->arch = ARCH_NVPTX;
    strcpy(t->triple, "nvptx64-nvidia-cuda");
    strcpy(t->cpu, have_cpu ? cpu : "sm_70");
    if (strncmp(t->cpu, "sm_", 3))
      return diag_set(d, MLC_ERR_USAGE, "target '%s': GPU architecture must look like sm_80, got '%s'", str, t->cpu);
    t->vector_bytes = 16;
    t->l1_bytes = 128 * 1024; /* shared memory + L1 per SM */
    t->l2_bytes = 40 * 1024 * 1024;
    t->l3_bytes = 0;
    if (!num_cores) t->num_cores = 1;
  } else if (!strcmp(kind, "llvm")) {
    char host[96];
    if (!host_triple(host, sizeof host)) return diag_set(d, MLC_ERR_INTERNAL, "host target triple too long");
    bool is_host = true;
    if (have_triple) {
      char *norm = LLVMNormalizeTargetTriple(triple);
      bool fits = copy_field(t->triple, sizeof t->triple, norm, strlen(norm));
      LLVMDisposeMessage(norm);
      if (!fits) return diag_set(d, MLC_ERR_USAGE, "target '%s': triple too long", str);
      is_host = !strcmp(t->triple, host);
    } else
      strcpy(t->triple, host);
    if (!strncmp(t->triple, "x86_64", 6)) t->arch = ARCH_X86_64;
    else if (!strncmp(t->triple, "aarch64", 7) || !strncmp(t->triple, "arm64", 5)) t->arch = ARCH_AARCH64;
    else {
      LLVMTargetRef tgt;
      char *err = NULL;
      if (LLVMGetTargetFromTriple(t->triple, &tgt, &err)) {
        diag_set(d, MLC_ERR_USAGE, "target '%s': unknown target triple '%s': %s", str, t->triple, err ? err : "");
        LLVMDisposeMessage(err);
        return d->status;
      }
      return diag_set(d, MLC_ERR_UNSUPPORTED,
                      "target '%s': triple '%s' is not supported (mlc generates code for x86_64, aarch64 and nvptx64)",
                      str, t->triple);
    }
    pthread_once(&host_once, read_host_once);
    bool host_cpu = is_host && (!have_cpu || !strcmp(cpu, host_info.cpu) || !strcmp(cpu, "native"));
    if (have_cpu && strcmp(cpu, "native")) strcpy(t->cpu, cpu);
    else if (is_host) strcpy(t->cpu, host_info.cpu);
    else strcpy(t->cpu, "generic");
    if (have_attr) strcpy(t->features, attr);
    else if (host_cpu) strcpy(t->features, host_info.features);
    else if (t->arch == ARCH_AARCH64)
      strcpy(t->features, "+neon");
    if (host_cpu) {
      t->l1_bytes = host_info.caches.l1_bytes;
      t->l2_bytes = host_info.caches.l2_bytes;
      t->l3_bytes = host_info.caches.l3_bytes;
    }
    t->kind = TARGET_CPU;
    t->vector_bytes = vector_bytes_for(t);
    t->dot_i8_lanes = dot_i8_lanes_for(t);
  } else
    return diag_set(d, MLC_ERR_USAGE, "target '%s': unknown target kind '%s' (expected llvm, cuda or nvptx)", str,
                    kind);

  /* Reject what LLVM does not know: triple, cpu, features. The last accepted triple/cpu/features is
   * remembered: building a target machine to check them costs as much as a small kernel's compile. */
  static pthread_mutex_t ok_lock = PTHREAD_MUTEX_INITIALIZER;
  static char ok_key[sizeof t->triple + sizeof t->cpu + sizeof t->features + 3];
  char key[sizeof ok_key];
  snprintf(key, sizeof key, "%s|%s|%s", t->triple, t->cpu, t->features);
  pthread_mutex_lock(&ok_lock);
  bool known = !strcmp(key, ok_key);
  pthread_mutex_unlock(&ok_lock);
  if (known) return MLC_OK;
  Diag tmp = {0};
  LLVMTargetMachineRef tm = create_tm(t, false, true, &tmp);
  if (!tm) return diag_set(d, tmp.status, "%s", tmp.msg);
  LLVMDisposeTargetMachine(tm);
  pthread_mutex_lock(&ok_lock);
  strcpy(ok_key, key);
  pthread_mutex_unlock(&ok_lock);
  return MLC_OK;
}
