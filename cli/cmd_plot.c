/* cli/cmd_plot.c — `tessera plot`: draw sweep results (a CSV with a header row) as a line or
 * scatter plot, one series per group, with the Pareto front of two columns, into a PNG. */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/common.h"
#include "core/buf.h"
#include "core/sweep.h"
#include "viz/plot.h"

static const char plot_usage[] =
    "usage: tessera plot RESULTS.csv -o PLOT.png --x COLUMN --y COLUMN [options]\n"
    "\n"
    "Draw sweep results (the CSV of 'tessera sweep', or any CSV with a header row) as a PNG:\n"
    "a line through each series by x, or a scatter plot, with ticks, axis labels and a legend.\n"
    "Rows whose 'error' column is not empty are skipped and counted. Needs cairo in the build.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE       the PNG to write (required; '-' for standard output)\n"
    "  -x, --x COLUMN          the column on the x axis\n"
    "  -y, --y COLUMN          the column on the y axis\n"
    "  -g, --group COLUMN      one series (colour, marker, legend entry) per value of COLUMN\n"
    "      --scatter           markers only, no lines\n"
    "      --pareto A,B        ring the Pareto-optimal rows of columns A and B (minimising both;\n"
    "                          'max:A' maximises A) and draw their front; A and B are the axes\n"
    "                          when --x and --y are not given\n"
    "      --logx, --logy      logarithmic axes (for geometric series)\n"
    "      --xlabel TEXT       the x axis label (default: the column name)\n"
    "      --ylabel TEXT       the y axis label (default: the column name)\n"
    "      --title TEXT        the title ('' for none; default: Y against X)\n"
    "      --size WxH          the image in pixels (default 800x500)\n"
    "  -q, --quiet             nothing on standard output (by default: the points plotted and\n"
    "                          the rows on the Pareto front, as CSV)\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 the plot was written, 2 a bad CSV, column or option, or no cairo.\n";

/* "WxH" with both from 200 to 8000. */
static int parse_size(const char *s, uint32_t *w, uint32_t *h)
{
    char *end;
    long a = strtol(s, &end, 10);
    if (end == s || (*end != 'x' && *end != 'X'))
        return -1;
    const char *t = end + 1;
    long b = strtol(t, &end, 10);
    if (end == t || *end || a < 200 || a > 8000 || b < 200 || b > 8000)
        return -1;
    *w = (uint32_t)a;
    *h = (uint32_t)b;
    return 0;
}

/* The rows on the Pareto front, as CSV (their columns but `error`), by increasing first column. */
static void print_front(const ts_table *t, const ts_plot *p, const char *pareto)
{
    size_t nf = ts_plot_npareto(p), nc = ts_table_ncols(t), ec = nc;
    ts_err e;
    ts_err_init(&e);
    if (ts_table_column(t, "error", "error", &ec, &e) != TS_OK)
        ec = nc;
    ts_err_free(&e);
    ts_buf b = TS_BUF_INIT;
    ts_buf_printf(&b, "Pareto front of %s: %zu of %zu row%s\n", pareto, nf, ts_plot_npoints(p),
                  ts_plot_npoints(p) == 1 ? "" : "s");
    for (size_t i = 0; i <= nf; i++) {
        bool first = true;
        for (size_t c = 0; c < nc; c++) {
            if (c == ec)
                continue;
            if (!first)
                ts_buf_putc(&b, ',');
            first = false;
            ts_csv_field(&b, i ? ts_table_cell(t, ts_plot_pareto_row(p, i - 1), c) : ts_table_header(t, c));
        }
        ts_buf_putc(&b, '\n');
    }
    fputs(ts_buf_str(&b), stdout);
    ts_buf_free(&b);
}

int cmd_plot(int argc, char **argv)
{
    enum { O_SCATTER = 256, O_PARETO, O_LOGX, O_LOGY, O_XLABEL, O_YLABEL, O_TITLE, O_SIZE };
    static const struct option longopts[] = {
        {"output", required_argument, 0, 'o'},  {"x", required_argument, 0, 'x'},
        {"y", required_argument, 0, 'y'},       {"group", required_argument, 0, 'g'},
        {"scatter", no_argument, 0, O_SCATTER}, {"pareto", required_argument, 0, O_PARETO},
        {"logx", no_argument, 0, O_LOGX},       {"logy", no_argument, 0, O_LOGY},
        {"xlabel", required_argument, 0, O_XLABEL}, {"ylabel", required_argument, 0, O_YLABEL},
        {"title", required_argument, 0, O_TITLE},   {"size", required_argument, 0, O_SIZE},
        {"quiet", no_argument, 0, 'q'},         {"help", no_argument, 0, 'h'},
        {0, 0, 0, 0},
    };
    ts_plot_opts o = {0};
    const char *output = NULL;
    bool quiet = false;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":o:x:y:g:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o': output = optarg; break;
        case 'x': o.x = optarg; break;
        case 'y': o.y = optarg; break;
        case 'g': o.group = optarg; break;
        case O_SCATTER: o.scatter = true; break;
        case O_PARETO: o.pareto = optarg; break;
        case O_LOGX: o.logx = true; break;
        case O_LOGY: o.logy = true; break;
        case O_XLABEL: o.xlabel = optarg; break;
        case O_YLABEL: o.ylabel = optarg; break;
        case O_TITLE: o.title = optarg; break;
        case O_SIZE:
            if (parse_size(optarg, &o.width, &o.height))
                return cli_usage_error("--size takes WxH, each from 200 to 8000 pixels, got '%s'", optarg);
            break;
        case 'q': quiet = true; break;
        case 'h': fputs(plot_usage, stdout); return 0;
        case ':': return cli_usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return cli_usage_error("unknown option '%s' (see 'tessera plot --help')", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return cli_usage_error("plot needs a CSV file (see 'tessera plot --help')");
    const char *csv = argv[optind++];
    if (optind < argc)
        return cli_usage_error("unexpected argument '%s'", argv[optind]);
    if (!output)
        return cli_usage_error("plot needs -o PLOT.png");
    if (!strcmp(output, "-")) /* the PNG goes to standard output */
        quiet = true;
    if ((!o.x || !o.y) && !o.pareto)
        return cli_usage_error("plot needs --x COLUMN and --y COLUMN (or --pareto A,B)");

    ts_err err;
    ts_err_init(&err);
    ts_table *t = NULL;
    ts_plot *p = NULL;
    int rc = 0;
    if (ts_table_load(&t, csv, &err) != TS_OK || ts_plot_prepare(&p, t, &o, &err) != TS_OK ||
        ts_plot_write_png(p, output, &err) != TS_OK) {
        rc = cli_fail(&err);
        goto out;
    }
    if (ts_plot_nfailed(p))
        fprintf(stderr, "tessera: %s: %zu row%s with an error skipped\n", csv, ts_plot_nfailed(p),
                ts_plot_nfailed(p) == 1 ? "" : "s");
    if (ts_plot_nempty(p))
        fprintf(stderr, "tessera: %s: %zu row%s without a value skipped\n", csv, ts_plot_nempty(p),
                ts_plot_nempty(p) == 1 ? "" : "s");
    if (ts_plot_x_repeats(p))
        fprintf(stderr, "tessera: note: rows of one series share an x value (another column varies): "
                        "try --group or --scatter\n");
    if (!quiet) {
        size_t ng = ts_plot_ngroups(p);
        printf("%s: %zu point%s", output, ts_plot_npoints(p), ts_plot_npoints(p) == 1 ? "" : "s");
        if (o.group)
            printf(" in %zu group%s", ng, ng == 1 ? "" : "s");
        printf("\n");
        if (o.pareto)
            print_front(t, p, o.pareto);
    }
out:
    ts_plot_destroy(p);
    ts_table_destroy(t);
    ts_err_free(&err);
    return rc;
}
