/* A cross-built `mlc run`: the runtime library plus src/cli/run.c, without the compiler. tests/cross builds it
 * for AArch64 with Debian's cross toolchain and runs AArch64 packages with it under qemu-aarch64.
 * Usage is exactly `mlc run`'s: mlc-run model.tar [--inputs ..] [--outputs ..] [--seed S] ... */
int cmd_run(int argc, char **argv);

int main(int argc, char **argv) { return cmd_run(argc, argv); }
