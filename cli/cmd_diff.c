/* cli/cmd_diff.c — `tessera diff`: two JSON reports side by side, every metric with its ratio. */
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/common.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/fileio.h"
#include "core/report.h"

static const char diff_usage[] =
    "usage: tessera diff A.json B.json [options]\n"
    "\n"
    "Compare two JSON reports ('tessera run -f json'): every metric side by side, named by its\n"
    "path as the CSV report names it (cycles, energy.total_j, utilization.tile.fraction,\n"
    "stats.NAME), each cell of a table statistic as stats.NAME[KEY].COLUMN (the layers table:\n"
    "KEY is the row's node), with the ratio B/A. Per-unit arrays and histograms are left out.\n"
    "\n"
    "options:\n"
    "  -f, --format FMT        text (default), json or csv\n"
    "  -o, --output FILE       write to FILE (default: standard output)\n"
    "      --changed           only the metrics that differ\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 the comparison was written (whether or not the reports differ), 2 a file\n"
    "that cannot be read or is not a report, or a bad option.\n";

/* Parse the report at path; NULL with err set when it cannot be read or is not JSON. */
static json_t *load_report(const char *path, ts_err *err)
{
    char *data = NULL;
    size_t len = 0;
    if (ts_read_file(path, &data, &len, err) != TS_OK)
        return NULL;
    json_error_t je;
    json_t *j = json_loadb(data, len, 0, &je);
    ts_free(data);
    if (!j)
        ts_err_at(err, TS_EINPUT, path, je.line, je.column, "not JSON: %s", je.text);
    return j;
}

int cmd_diff(int argc, char **argv)
{
    enum { O_CHANGED = 256 };
    static const struct option longopts[] = {
        {"format", required_argument, 0, 'f'}, {"output", required_argument, 0, 'o'},
        {"changed", no_argument, 0, O_CHANGED}, {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    const char *output = "-";
    int fmt = TS_FMT_TEXT, c;
    bool changed = false;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'f':
            if ((fmt = ts_format_parse(optarg)) < 0)
                return cli_usage_error("unknown format '%s' (text, json or csv)", optarg);
            break;
        case 'o': output = optarg; break;
        case O_CHANGED: changed = true; break;
        case 'h': fputs(diff_usage, stdout); return 0;
        case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("unknown option '%s' (see 'tessera diff --help')", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return cli_usage_error("diff needs two JSON reports (see 'tessera diff --help')");
    const char *names[2] = {argv[optind], argv[optind + 1]};
    ts_err err;
    ts_err_init(&err);
    ts_buf out = TS_BUF_INIT;
    json_t *a = load_report(names[0], &err), *b = a ? load_report(names[1], &err) : NULL;
    int rc = 0;
    if (!a || !b || ts_report_diff(a, b, names, (ts_format)fmt, changed, &out, &err) != TS_OK ||
        ts_write_file_atomic(output, ts_buf_str(&out), out.len, &err) != TS_OK)
        rc = cli_fail(&err);
    json_decref(a);
    json_decref(b);
    ts_buf_free(&out);
    ts_err_free(&err);
    return rc;
}
