/* cli/cmd_asm.c — `tessera asm`, `disasm` and `compile`. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/common.h"
#include "cli/lowering.h"
#include "core/buf.h"
#include "core/fileio.h"
#include "core/npy.h"
#include "workloads/workload.h"

static const char asm_usage[] =
    "usage: tessera asm INPUT.s -o OUTPUT [-c CONFIG]\n"
    "\n"
    "Assemble a text program into a binary program. The family comes from the '.arch' line,\n"
    "or from CONFIG; with -c the program is also stamped with the config's fingerprint, so it\n"
    "runs only on that config.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE     binary program to write (required)\n"
    "  -c, --config CONFIG   check and stamp against this config\n"
    "  -s, --set KEY=VALUE   override a config key (repeatable, with -c)\n"
    "  -h, --help            this text\n";

static const char compile_usage[] =
    "usage: tessera compile -c CONFIG INPUT -o OUTPUT\n"
    "\n"
    "Compile INPUT for CONFIG into a binary program stamped with the config's fingerprint.\n"
    "INPUT is an assembly file or built-in program, or a model (an ONNX file, a workload YAML\n"
    "file or a built-in workload such as matmul:m=256,k=256,n=256), which is lowered for the\n"
    "config's family (the IPU today).\n"
    "\n"
    "options:\n"
    "  -c, --config CONFIG   chip config (file or built-in name, required)\n"
    "  -o, --output FILE     binary program to write (required)\n"
    "  -s, --set KEY=VALUE   override a config key (repeatable)\n"
    "      --planner NAME    how a model is lowered for the IPU: auto (the cheapest plan per\n"
    "                        operator by the cost model, the default), lcs (load-compute-\n"
    "                        store), t10 (compute-shift MatMul, Gemm, 1x1 Conv) or split\n"
    "                        (t10's partitions, nothing rotating)\n"
    "      --max-tiles N     a model's plan uses at most the first N tiles (IPU; default all)\n"
    "      --inputs FILE     a model's values: a .npz archive whose arrays name data inputs and\n"
    "                        weights (docs/values.md)\n"
    "      --weights-out FILE  write the values every input and weight of the model is\n"
    "                        compiled with (given or filled, by ONNX name, before folding) to\n"
    "                        FILE (.npz), before compiling it (a refused model still gives them)\n"
    "  -h, --help            this text\n";

static const char disasm_usage[] =
    "usage: tessera disasm INPUT [-o OUTPUT]\n"
    "\n"
    "Print a binary program as canonical assembly text; assembling that text gives back the\n"
    "same bytes.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE   write the text to FILE (default: standard output)\n"
    "  -h, --help          this text\n";

/* Shared by asm and compile: read INPUT, optionally against CONFIG, write OUTPUT. */
static int assemble(int argc, char **argv, const char *usage, bool need_config)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"config", required_argument, 0, 'c'},
        {"set", required_argument, 0, 's'},    {"help", no_argument, 0, 'h'},
        {"planner", required_argument, 0, 'R'}, {"inputs", required_argument, 0, 'X'},
        {"weights-out", required_argument, 0, 'Y'}, {"max-tiles", required_argument, 0, 'T'}, {0, 0, 0, 0},
    };
    const char *output = NULL, *config = NULL, *planner = NULL, *inputs = NULL, *weights_out = NULL;
    const char *max_tiles = NULL;
    cli_sets sets = {0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:c:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'c': config = optarg; break;
        case 's': cli_sets_push(&sets, optarg); break;
        case 'R':
            if (!need_config || cli_check_planner(optarg)) { /* compile only */
                cli_sets_free(&sets);
                return need_config ? TS_EXIT_INPUT : cli_usage_error("unknown option '--planner'");
            }
            planner = optarg;
            break;
        case 'T':
            if (!need_config || cli_check_setting("max_tiles", optarg)) { /* compile only */
                cli_sets_free(&sets);
                return need_config ? TS_EXIT_INPUT : cli_usage_error("unknown option '--max-tiles'");
            }
            max_tiles = optarg;
            break;
        case 'X':
        case 'Y':
            if (!need_config) { /* compile only */
                cli_sets_free(&sets);
                return cli_usage_error("unknown option '%s'", argv[optind - 1]);
            }
            *(c == 'X' ? &inputs : &weights_out) = optarg;
            break;
        case 'h': fputs(usage, stdout); cli_sets_free(&sets); return 0;
        case ':': cli_sets_free(&sets); return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cli_sets_free(&sets); return cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1 || !output || (need_config && !config)) {
        cli_sets_free(&sets);
        fputs(usage, stderr);
        return TS_EXIT_INPUT;
    }
    const char *input = argv[optind];
    ts_err err;
    ts_err_init(&err);
    ts_config *cfg = NULL;
    ts_program *prog = NULL;
    const ts_family *fam = NULL;
    int rc = TS_EXIT_OK;
    ts_npz given = {0};
    ts_lowered *lowered = NULL;
    if (ts_check_writable(output, &err) != TS_OK || ts_check_writable(weights_out, &err) != TS_OK ||
        (inputs && ts_npz_read(inputs, &given, &err) != TS_OK)) { /* before a compilation that may take a while */
        rc = cli_fail(&err);
        goto out;
    }
    if (config) {
        if (cli_load_config(&cfg, config, sets.v, sets.n, &err) != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
        fam = ts_family_find(ts_config_arch(cfg));
    }
    ts_lower_setting settings[2];
    ts_lower_opts lopts = cli_lower_opts(settings, planner, max_tiles);
    ts_lower_values vals = {inputs ? &given : NULL, inputs, inputs || weights_out};
    if (weights_out) { /* first, so that a model a family refuses still gives its values */
        ts_npz w = {0};
        ts_status ws = ts_wl_is_model(input) ? ts_lower_model_given(input, &vals, &w, &err)
                                             : ts_err_set(&err, TS_EINPUT, "--weights-out needs a model, not '%s'", input);
        if (ws == TS_OK)
            ws = ts_npz_write(weights_out, w.v, w.n, &err);
        ts_npz_free(&w);
        if (ws != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
    }
    if (cli_load_workload_values(&prog, input, cfg, fam, &lopts, &vals, &lowered, &err) != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (cfg) {
        uint64_t fp = ts_config_fingerprint(cfg);
        if (ts_program_check_config(prog, fp, ts_config_name(cfg), &err) != TS_OK) {
            rc = cli_fail(&err);
            goto out;
        }
        prog->config_fp = fp;
    }
    if (ts_program_write(prog, output, &err) != TS_OK)
        rc = cli_fail(&err);
out:
    ts_lowered_destroy(lowered);
    ts_npz_free(&given);
    ts_program_destroy(prog);
    ts_config_destroy(cfg);
    ts_err_free(&err);
    cli_sets_free(&sets);
    return rc;
}

int cmd_asm(int argc, char **argv) { return assemble(argc, argv, asm_usage, false); }

int cmd_compile(int argc, char **argv) { return assemble(argc, argv, compile_usage, true); }

int cmd_disasm(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *output = NULL;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'h': fputs(disasm_usage, stdout); return 0;
        case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) {
        fputs(disasm_usage, stderr);
        return TS_EXIT_INPUT;
    }
    ts_err err;
    ts_err_init(&err);
    ts_program *prog = NULL;
    ts_buf text = TS_BUF_INIT;
    int rc = TS_EXIT_OK;
    const ts_family *fam = NULL;
    if (cli_load_program(&prog, argv[optind], NULL, &err) != TS_OK ||
        !(fam = ts_family_find(prog->arch)) ||
        ts_disasm(prog, fam->isa, &text, &err) != TS_OK ||
        ts_write_file_atomic(output, text.data ? text.data : "", text.len, &err) != TS_OK)
        rc = cli_fail(&err);
    ts_buf_free(&text);
    ts_program_destroy(prog);
    ts_err_free(&err);
    return rc;
}
