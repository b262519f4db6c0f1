/* cli/tessera.c — the `tessera` program: subcommand dispatch, --help and --version. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common.h"
#include "core/fileio.h"
#include "core/limit.h"
#include "ts_build.h"

static const char usage[] =
    "usage: tessera <command> [options]\n"
    "\n"
    "A cycle-accurate simulator for spatial AI chips: Graphcore-style IPU, Groq-style TSP and\n"
    "Cerebras-style wafer mesh.\n"
    "\n"
    "commands:\n"
    "  run       simulate a program or model on a chip config and write a report\n"
    "  compile   turn a program or model into a binary program for one config\n"
    "  asm       assemble a text program into a binary program\n"
    "  disasm    print a binary program as text\n"
    "  info      summarise a chip config (units, SRAM, peak MACs, bandwidths)\n"
    "  config    print the documented schema of a family, or a config resolved\n"
    "  sweep     run a design-space sweep: many configs and workloads, one CSV row each\n"
    "  plot      draw sweep results as a line, scatter or Pareto plot (PNG)\n"
    "  diff      compare two JSON reports: every metric side by side with its ratio\n"
    "  view      run a simulation in the live window (the same as 'run --view')\n"
    "\n"
    "With no command, `tessera` runs the built-in default workload on the default config.\n"
    "`tessera <command> --help` describes each command. Exit status: 0 success, 1 simulation\n"
    "error (hang, hazard, out-of-range access, cycle limit), 2 bad input or usage.\n"
    "\n"
    "Inputs are checked against size limits (file size, YAML nodes, tensor elements and bytes,\n"
    "model operators, assembler ranges and data, sweep points); TESSERA_LIMITS=name=N,...\n"
    "raises them (docs/cli.md lists them).\n";

/* SIGINT, SIGTERM or SIGHUP: remove the temporary files being written (a trace, a report), then
 * die of the signal as if there were no handler, so the caller sees how the program ended. */
static void on_fatal_signal(int sig)
{
    ts_tmp_remove_all();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* `tessera view ARGS` is `tessera run --view ARGS`. */
static int cmd_view(int argc, char **argv)
{
    char **v = calloc((size_t)argc + 2, sizeof *v);
    if (!v)
        return cli_usage_error("out of memory");
    v[0] = argv[0];
    v[1] = "--view";
    for (int i = 1; i < argc; i++)
        v[i + 1] = argv[i];
    int rc = cmd_run(argc + 1, v);
    free(v);
    return rc;
}

int main(int argc, char **argv)
{
    /* The input limits (core/limit.h), raised or lowered for every command at once. */
    const char *limits = getenv("TESSERA_LIMITS");
    char why[256];
    if (limits && ts_limits_parse(limits, why, sizeof why))
        return cli_usage_error("TESSERA_LIMITS: %s", why);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (int sig = 0; sig < 3; sig++) { /* a signal ignored by the parent (nohup) stays ignored */
        struct sigaction old;
        int s = sig == 0 ? SIGINT : sig == 1 ? SIGTERM : SIGHUP;
        if (sigaction(s, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(s, &sa, NULL);
    }
    if (argc < 2)
        return cmd_run(argc, argv);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
        printf("tessera %s\n", TS_VERSION);
        return 0;
    }
    static const struct { const char *name; int (*fn)(int, char **); } cmds[] = {
        {"run", cmd_run},       {"compile", cmd_compile}, {"asm", cmd_asm},
        {"disasm", cmd_disasm}, {"info", cmd_info},       {"config", cmd_config},
        {"sweep", cmd_sweep},
        {"plot", cmd_plot},     {"diff", cmd_diff},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    if (!strcmp(cmd, "view"))
        return cmd_view(argc - 1, argv + 1);
    if (cmd[0] == '-')
        return cmd_run(argc, argv);
    return cli_usage_error("unknown command '%s' (see 'tessera --help')", cmd);
}
