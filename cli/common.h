/* cli/common.h — what the subcommands share: loading configs, energy tables and programs by
 * path or built-in name, printing errors, exit codes. Only cli/ prints and exits. */
#ifndef TS_CLI_COMMON_H
#define TS_CLI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include "arch/registry.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/err.h"
#include "core/program.h"

enum { TS_EXIT_OK = 0, TS_EXIT_SIM = 1, TS_EXIT_INPUT = 2 };

/* Print "tessera: <formatted error>" (and its detail) to stderr; return the exit code for it. */
int cli_fail(const ts_err *err);
/* Print "tessera: msg" to stderr and return TS_EXIT_INPUT. */
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Options for loading configs: registry schemas, built-ins, --set overrides. */
ts_config_opts cli_config_opts(const char *const *sets, size_t nsets);
ts_status cli_load_config(ts_config **out, const char *path, const char *const *sets, size_t nsets,
                          ts_err *err);
ts_status cli_load_energy(ts_energy_table **out, const ts_config *cfg, const char *override,
                          ts_err *err);

/* Read a workload that is a program: binary file, assembly file (.s/.asm/text) or built-in
 * program name. isa may be NULL: then the arch comes from the file (`.arch` or the binary header).
 * *arch_out receives the family it is for. Other workload kinds are TS_EINPUT for now. */
ts_status cli_load_program(ts_program **out, const char *path, const ts_family *fam, ts_err *err);
/* The same for a config (a family's generator, e.g. the wafer's "stencil:...", places its
 * program on the config's mesh); cfg may be NULL. */
ts_status cli_load_program_for(ts_program **out, const char *path, const ts_family *fam, const ts_config *cfg,
                               ts_err *err);
/* "program generators ...:" and one line per family generator (ts_family.generators). */
void cli_list_generators(ts_buf *out);
/* Arch named by a program file or built-in (binary header or `.arch` line); NULL if unknown. */
const ts_family *cli_program_family(const char *path, ts_err *err);

/* After a workload failed to load as neither a file nor a built-in: add to err's message the
 * built-in model or program closest to name (within 2 edits), or the hint to list them. */
void cli_workload_hint(const char *name, ts_err *err);

/* Growable list of --set values (borrowed argv strings). */
typedef struct cli_sets { const char **v; size_t n, cap; } cli_sets;
int cli_sets_push(cli_sets *s, const char *kv);
void cli_sets_free(cli_sets *s);

int cmd_run(int argc, char **argv);
int cmd_asm(int argc, char **argv);
int cmd_disasm(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
