/* fuzz/fuzz_plot.c — libFuzzer target for the CSV tables `tessera plot` reads (viz/plot.c).
 *
 * The input is parsed as a CSV table. A table that parses is written back as CSV (every field
 * quoted where needed) and must parse again to the same cells; then plots are laid out over its
 * columns (x, y, group and Pareto columns and log axes picked from the first bytes), and every
 * tick of a plot that lays out must lie in its axis range and format as a label. Nothing is
 * drawn: the drawing has no input of its own.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/sweep.h"
#include "viz/plot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_axis(const ts_plot_axis *a)
{
    char lab[64];
    if (!(a->lo < a->hi) || a->nticks > TS_PLOT_MAX_TICKS)
        abort();
    for (size_t i = 0; i < a->nticks; i++) {
        double slack = (a->hi - a->lo) * 1e-6;
        if (a->ticks[i] < a->lo - slack || a->ticks[i] > a->hi + slack)
            abort();
        if (ts_plot_si(a->ticks[i], a->step, lab, sizeof lab) >= sizeof lab)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ts_table *t = NULL, *t2 = NULL;
    ts_err err;
    ts_err_init(&err);
    if (ts_table_parse(&t, "fuzz.csv", (const char *)data, size, &err) != TS_OK) {
        ts_err_free(&err);
        return 0;
    }
    size_t nc = ts_table_ncols(t), nr = ts_table_nrows(t);
    /* write it back and read it again: the same cells */
    ts_buf b = TS_BUF_INIT;
    for (size_t r = 0; r <= nr; r++) {
        for (size_t c = 0; c < nc; c++) {
            const char *s = r ? ts_table_cell(t, r - 1, c) : ts_table_header(t, c);
            if (c)
                ts_buf_putc(&b, ',');
            /* an empty single-column row would read as a blank line: quote it */
            if (nc == 1 && !*s)
                ts_buf_puts(&b, "\"\"");
            else
                ts_csv_field(&b, s);
        }
        ts_buf_putc(&b, '\n');
    }
    if (!b.oom) {
        if (ts_table_parse(&t2, "again.csv", b.data, b.len, &err) != TS_OK)
            abort();
        if (ts_table_ncols(t2) != nc || ts_table_nrows(t2) != nr)
            abort();
        for (size_t r = 0; r < nr; r++)
            for (size_t c = 0; c < nc; c++)
                if (strcmp(ts_table_cell(t, r, c), ts_table_cell(t2, r, c)))
                    abort();
    }
    ts_buf_free(&b);
    /* plots over the columns */
    uint8_t k0 = size > 0 ? data[0] : 0, k1 = size > 1 ? data[1] : 0;
    for (size_t x = 0; x < nc && x < 4; x++)
        for (size_t y = 0; y < nc && y < 4; y++) {
            char pareto[600];
            ts_plot_opts o = {.x = ts_table_header(t, x), .y = ts_table_header(t, y),
                              .logx = k0 & 1, .logy = k0 & 2, .scatter = k0 & 4};
            if (k0 & 8)
                o.group = ts_table_header(t, (x + y + k1) % nc);
            if (k0 & 16) {
                snprintf(pareto, sizeof pareto, "%s%s,%s%s", k1 & 1 ? "max:" : "", ts_table_header(t, y),
                         k1 & 2 ? "max:" : "", ts_table_header(t, x));
                o.pareto = pareto;
            }
            ts_plot *p = NULL;
            if (ts_plot_prepare(&p, t, &o, &err) == TS_OK) {
                if (ts_plot_npoints(p) + ts_plot_nfailed(p) + ts_plot_nempty(p) > nr || !ts_plot_npoints(p))
                    abort();
                check_axis(ts_plot_xaxis(p));
                check_axis(ts_plot_yaxis(p));
                for (size_t i = 0; i < ts_plot_npareto(p); i++)
                    if (ts_plot_pareto_row(p, i) >= nr)
                        abort();
            }
            ts_plot_destroy(p);
        }
    ts_table_destroy(t2);
    ts_table_destroy(t);
    ts_err_free(&err);
    return 0;
}
