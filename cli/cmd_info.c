/* cli/cmd_info.c — `tessera info` (chip summary) and `tessera config` (schema, resolved config). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/common.h"
#include "configs/builtin.h"
#include "core/buf.h"
#include "core/units.h"
#include "workloads/info.h"
#include "workloads/workload.h"

static const char info_usage[] =
    "usage: tessera info CONFIG [--format text|json] [--set KEY=VALUE]...\n"
    "       tessera info MODEL [--format text|json] [--inputs NAME,...] [--dims NAME=N,...]\n"
    "\n"
    "Summarise a chip config: clock, on-chip SRAM, unit counts, peak MACs per cycle per dtype\n"
    "and headline bandwidths in bytes per cycle.\n"
    "\n"
    "Or summarise a model (an ONNX file, a workload YAML file or a built-in workload such as\n"
    "'resnet50' or 'matmul:m=1024,k=1024,n=1024'): nodes by op type, MACs, parameters and\n"
    "activation bytes.\n"
    "\n"
    "options:\n"
    "  -f, --format FMT        text (default) or json\n"
    "  -s, --set KEY=VALUE     override a config key (repeatable)\n"
    "      --inputs NAME,...   the data inputs of a model stripped of weights (default: the first\n"
    "                          graph input; every other graph input is then a weight)\n"
    "      --dims NAME=N,...   values for symbolic dimensions, e.g. batch=1,seq=128\n";

static const char config_usage[] =
    "usage: tessera config --schema ARCH\n"
    "       tessera config --list\n"
    "       tessera config CONFIG [--set KEY=VALUE]...\n"
    "\n"
    "--schema prints every key a family's config accepts, with type, unit, range, default and\n"
    "source. --list prints the families and built-in configs. Given a CONFIG, prints it\n"
    "resolved: bases followed, overrides applied, defaults filled in.\n";

/* Modelled power at peak activity (docs/energy.md, "power at peak"): every MAC unit busy at the
 * dtype that costs most, every SRAM port moving its published bytes per cycle, plus static power;
 * priced with the config's energy table scaled to its node and supply. */
typedef struct peak_power {
    bool ok;              /* the table prices what the chip has */
    const char *mac_dtype;
    double mac_w, sram_w, static_w, total_w;
} peak_power;

static const char *mac_event(const char *dtype)
{
    if (!strncmp(dtype, "int8", 4))
        return "int8_mac";
    if (!strncmp(dtype, "fp16", 4))
        return "fp16_mac";
    if (!strncmp(dtype, "fp32", 4))
        return "fp32_mac";
    return NULL;
}

static peak_power power_at_peak(const ts_config *cfg, const ts_info *in)
{
    peak_power p = {0};
    ts_energy_table *t = NULL;
    ts_err err;
    ts_err_init(&err);
    if (cli_load_energy(&t, cfg, NULL, &err) != TS_OK) {
        ts_err_free(&err);
        return p;
    }
    ts_err_free(&err);
    for (size_t i = 0; i < in->npeak; i++) {
        const char *ev = mac_event(in->peak[i].dtype);
        const ts_energy_entry *e = ev ? ts_energy_find(t, ev) : NULL;
        double w = e ? in->peak[i].macs * e->joules * in->clock_hz : 0;
        if (w > p.mac_w) {
            p.mac_w = w;
            p.mac_dtype = in->peak[i].dtype;
        }
    }
    const ts_energy_entry *rd = ts_energy_find(t, "sram_read_64b"), *wr = ts_energy_find(t, "sram_write_64b");
    for (size_t i = 0; i < in->nbw; i++) {
        const char *n = in->bw[i].name;
        if (!strstr(n, "sram") && !strstr(n, "memory"))
            continue;
        const ts_energy_entry *e = strstr(n, "write") ? wr : rd;
        if (e)
            p.sram_w += in->bw[i].bytes_per_cycle / 8.0 * e->joules * in->clock_hz;
    }
    p.static_w = ts_config_static_power(cfg);
    p.total_w = p.mac_w + p.sram_w + p.static_w;
    p.ok = p.mac_dtype != NULL;
    ts_energy_destroy(t);
    return p;
}

static void info_json(const ts_config *cfg, const ts_info *in, ts_buf *b)
{
    ts_buf_puts(b, "{\n  \"arch\": ");
    ts_buf_json_str(b, ts_config_arch(cfg));
    ts_buf_puts(b, ",\n  \"config\": ");
    ts_buf_json_str(b, ts_config_name(cfg));
    ts_buf_puts(b, ",\n  \"clock_hz\": ");
    ts_buf_json_num(b, in->clock_hz);
    ts_buf_puts(b, ",\n  \"sram_bytes\": ");
    ts_buf_json_num(b, (double)in->sram_bytes);
    ts_buf_puts(b, ",\n  \"units\": {");
    for (size_t i = 0; i < in->nunits; i++) {
        ts_buf_puts(b, i ? ", " : "");
        ts_buf_json_str(b, in->units[i].name);
        ts_buf_puts(b, ": ");
        ts_buf_json_num(b, (double)in->units[i].n);
    }
    ts_buf_puts(b, "},\n  \"peak_macs_per_cycle\": {");
    for (size_t i = 0; i < in->npeak; i++) {
        ts_buf_puts(b, i ? ", " : "");
        ts_buf_json_str(b, in->peak[i].dtype);
        ts_buf_puts(b, ": ");
        ts_buf_json_num(b, in->peak[i].macs);
    }
    ts_buf_puts(b, "},\n  \"bandwidth_bytes_per_cycle\": {");
    for (size_t i = 0; i < in->nbw; i++) {
        ts_buf_puts(b, i ? ", " : "");
        ts_buf_json_str(b, in->bw[i].name);
        ts_buf_puts(b, ": ");
        ts_buf_json_num(b, in->bw[i].bytes_per_cycle);
    }
    peak_power pp = power_at_peak(cfg, in);
    ts_buf_puts(b, "},\n  \"power_at_peak_w\": {\"total\": ");
    ts_buf_json_num(b, pp.total_w);
    ts_buf_puts(b, ", \"macs\": ");
    ts_buf_json_num(b, pp.mac_w);
    ts_buf_puts(b, ", \"sram\": ");
    ts_buf_json_num(b, pp.sram_w);
    ts_buf_puts(b, ", \"static\": ");
    ts_buf_json_num(b, pp.static_w);
    ts_buf_puts(b, ", \"node_m\": ");
    ts_buf_json_num(b, ts_config_node(cfg));
    ts_buf_puts(b, ", \"vdd\": ");
    ts_buf_json_num(b, ts_config_vdd(cfg));
    ts_buf_puts(b, "}\n}\n");
}

static void info_text(const ts_config *cfg, const ts_info *in, ts_buf *b)
{
    char q[64];
    ts_buf_printf(b, "%s (arch %s)\n", ts_config_name(cfg), ts_config_arch(cfg));
    ts_unit_format(in->clock_hz, TS_UNIT_FREQ, q, sizeof q);
    ts_buf_printf(b, "  %-28s %s\n", "clock", q);
    ts_unit_format((double)in->sram_bytes, TS_UNIT_BYTES, q, sizeof q);
    ts_buf_printf(b, "  %-28s %s\n", "on-chip SRAM", q);
    for (size_t i = 0; i < in->nunits; i++)
        ts_buf_printf(b, "  %-28s %llu\n", in->units[i].name, (unsigned long long)in->units[i].n);
    for (size_t i = 0; i < in->npeak; i++) {
        char label[64];
        snprintf(label, sizeof label, "peak %s MACs/cycle", in->peak[i].dtype);
        ts_buf_printf(b, "  %-28s %.0f  (%.4g TFLOPS)\n", label, in->peak[i].macs,
                      2.0 * in->peak[i].macs * in->clock_hz / 1e12);
    }
    for (size_t i = 0; i < in->nbw; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s", in->bw[i].name);
        ts_unit_format(in->bw[i].bytes_per_cycle * in->clock_hz, TS_UNIT_BANDWIDTH, q, sizeof q);
        ts_buf_printf(b, "  %-28s %.6g B/cycle  (%s)\n", label, in->bw[i].bytes_per_cycle, q);
    }
    peak_power pp = power_at_peak(cfg, in);
    if (pp.ok) {
        char n[64] = "the table's node", v[64] = "the table's 0.9 V";
        if (ts_config_node(cfg) > 0)
            snprintf(n, sizeof n, "%.3g nm", ts_config_node(cfg) * 1e9);
        if (ts_config_node(cfg) > 0 && ts_config_vdd(cfg) > 0)
            snprintf(v, sizeof v, "%.3g V", ts_config_vdd(cfg));
        ts_buf_printf(b, "  %-28s %.4g W  (%s MACs %.4g W, SRAM %.4g W, static %.4g W; %s, %s)\n", "power at peak",
                      pp.total_w, pp.mac_dtype, pp.mac_w, pp.sram_w, pp.static_w, n, v);
    }
}

int cmd_info(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"set", required_argument, 0, 's'},
        {"inputs", required_argument, 0, 'I'}, {"dims", required_argument, 0, 'D'},
        {"help", no_argument, 0, 'h'},         {0, 0, 0, 0},
    };
    bool json = false;
    const char *inputs = NULL, *dims = NULL;
    cli_sets sets = {0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if (strcmp(optarg, "json") && strcmp(optarg, "text")) {
                cli_sets_free(&sets);
                return cli_usage_error("unknown format '%s' (text or json)", optarg);
            }
            json = !strcmp(optarg, "json");
            break;
        case 's': cli_sets_push(&sets, optarg); break;
        case 'I': inputs = optarg; break;
        case 'D': dims = optarg; break;
        case 'h': fputs(info_usage, stdout); cli_sets_free(&sets); return 0;
        case ':': cli_sets_free(&sets); return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cli_sets_free(&sets); return cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1) {
        cli_sets_free(&sets);
        fputs(info_usage, stderr);
        return TS_EXIT_INPUT;
    }
    ts_err err;
    ts_err_init(&err);
    ts_config *cfg = NULL;
    int rc = TS_EXIT_OK;
    ts_info in = {0};
    ts_buf b = TS_BUF_INIT;
    if (ts_wl_is_model(argv[optind])) {
        if (sets.n)
            rc = cli_usage_error("--set applies to chip configs, not to models");
        else if (ts_wl_info(argv[optind], inputs, dims, json, &b, &err) != TS_OK)
            rc = cli_fail(&err);
        else
            fputs(ts_buf_str(&b), stdout);
    } else if (inputs || dims) {
        rc = cli_usage_error("--inputs and --dims apply to models, not to chip configs");
    } else if (cli_load_config(&cfg, argv[optind], sets.v, sets.n, &err) != TS_OK ||
        ts_family_find(ts_config_arch(cfg))->info(ts_config_data(cfg), &in, &err) != TS_OK) {
        rc = cli_fail(&err);
    } else {
        (json ? info_json : info_text)(cfg, &in, &b);
        fputs(ts_buf_str(&b), stdout);
    }
    ts_buf_free(&b);
    ts_config_destroy(cfg);
    ts_err_free(&err);
    cli_sets_free(&sets);
    return rc;
}

int cmd_config(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"schema", required_argument, 0, 'S'}, {"list", no_argument, 0, 'l'},
        {"set", required_argument, 0, 's'},    {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *schema = NULL;
    bool list = false;
    cli_sets sets = {0};
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":s:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'S': schema = optarg; break;
        case 'l': list = true; break;
        case 's': cli_sets_push(&sets, optarg); break;
        case 'h': fputs(config_usage, stdout); cli_sets_free(&sets); return 0;
        case ':': cli_sets_free(&sets); return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: cli_sets_free(&sets); return cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    ts_buf b = TS_BUF_INIT;
    int rc = TS_EXIT_OK;
    if (schema) {
        const ts_family *f = ts_family_find(schema);
        if (!f || optind != argc) {
            ts_buf_free(&b);
            cli_sets_free(&sets);
            if (f)
                return cli_usage_error("--schema takes no CONFIG");
            ts_buf names = TS_BUF_INIT;
            for (size_t i = 0; i < ts_family_count(); i++)
                ts_buf_printf(&names, "%s%s", i ? ", " : "", ts_family_at(i)->name);
            rc = cli_usage_error("unknown arch '%s' (known: %s)", schema, ts_buf_str(&names));
            ts_buf_free(&names);
            return rc;
        }
        ts_schema_print(f->schema, &b);
    } else if (list) {
        ts_buf_puts(&b, "families:\n");
        for (size_t i = 0; i < ts_family_count(); i++)
            ts_buf_printf(&b, "  %-6s %s\n", ts_family_at(i)->name, ts_family_at(i)->schema->title);
        ts_buf_puts(&b, "built-in files:\n");
        for (size_t i = 0; i < ts_builtin_count(); i++)
            ts_buf_printf(&b, "  %-14s %s\n", ts_builtin_name(i), ts_builtin_path(i));
        cli_list_generators(&b);
    } else if (optind == argc - 1) {
        ts_err err;
        ts_err_init(&err);
        ts_config *cfg = NULL;
        if (cli_load_config(&cfg, argv[optind], sets.v, sets.n, &err) != TS_OK)
            rc = cli_fail(&err);
        else
            ts_config_dump(cfg, &b);
        ts_config_destroy(cfg);
        ts_err_free(&err);
    } else {
        fputs(config_usage, stderr);
        rc = TS_EXIT_INPUT;
    }
    fputs(ts_buf_str(&b), stdout);
    ts_buf_free(&b);
    cli_sets_free(&sets);
    return rc;
}
