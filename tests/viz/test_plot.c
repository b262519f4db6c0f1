/* tests/viz/test_plot.c — plots of sweep results (viz/plot): the CSV table and its errors, column
 * look-up, numbers, ticks and SI labels, Pareto fronts against brute force, the layout of series;
 * then the command line end to end: a small sweep, `tessera plot`, and the PNG checked by pixel
 * statistics (size, each group's colour inside the frame, the Pareto colour). */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/err.h"
#include "ts_build.h"
#include "viz/plot.h"
#include "viz/links.h"
#include "viz/roofline.h"

#if TS_HAVE_CAIRO
#include <cairo.h>
#endif

static ts_table *table(const char *text)
{
    ts_table *t = NULL;
    ts_err e;
    ts_err_init(&e);
    ts_status st = ts_table_parse(&t, "r.csv", text, strlen(text), &e);
    ck_assert_msg(st == TS_OK, "%s", e.msg);
    ts_err_free(&e);
    return t;
}

/* Parse text that must fail; the formatted error must equal want. */
static void table_error_n(const char *text, size_t len, const char *want)
{
    ts_table *t = NULL;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_table_parse(&t, "r.csv", text, len, &e), TS_EINPUT);
    ck_assert_ptr_null(t);
    char buf[1200];
    ts_err_format(&e, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
    ts_err_free(&e);
}

static void table_error(const char *text, const char *want) { table_error_n(text, strlen(text), want); }

START_TEST(table_fields_quotes_and_positions)
{
    ts_table *t = table("point,name,error\r\n"
                        "0,\"a, b\",\r\n"
                        "1,\"say \"\"hi\"\"\",\"two\nlines\"\r\n"
                        "\r\n"
                        "2,,\n");
    ck_assert_uint_eq(ts_table_ncols(t), 3);
    ck_assert_uint_eq(ts_table_nrows(t), 3);
    ck_assert_str_eq(ts_table_header(t, 2), "error");
    ck_assert_str_eq(ts_table_cell(t, 0, 1), "a, b");
    ck_assert_str_eq(ts_table_cell(t, 0, 2), "");
    ck_assert_str_eq(ts_table_cell(t, 1, 1), "say \"hi\"");
    ck_assert_str_eq(ts_table_cell(t, 1, 2), "two\nlines");
    ck_assert_str_eq(ts_table_cell(t, 2, 0), "2");
    ck_assert_str_eq(ts_table_cell(t, 2, 2), "");
    int line, col;
    ts_table_pos(t, 1, 2, &line, &col);
    ck_assert_int_eq(line, 3);
    ck_assert_int_eq(col, 16);
    ts_table_pos(t, 2, 0, &line, &col); /* after the quoted line break and the blank line */
    ck_assert_int_eq(line, 6);
    ck_assert_int_eq(col, 1);
    ts_table_destroy(t);
    /* no newline at the end, and a trailing comma at the very end */
    t = table("a,b\n1,");
    ck_assert_uint_eq(ts_table_nrows(t), 1);
    ck_assert_str_eq(ts_table_cell(t, 0, 1), "");
    ts_table_destroy(t);
}
END_TEST

START_TEST(table_errors)
{
    table_error("", "r.csv:1:1: no header row (the file is empty)");
    table_error("\n\n", "r.csv:1:1: no header row (the file is empty)");
    table_error("a,b,c\n1,2,3\n4,5\n", "r.csv:3:1: row has 2 fields, the header has 3");
    table_error("a,b\n1,\"open\n", "r.csv:2:3: quoted field is not closed");
    table_error("a,b\n1,\"x\"y\n", "r.csv:2:6: unexpected character after a closing quote (a field is quoted whole)");
    table_error("a,b\n1,x\"y\n",
                "r.csv:2:4: quote inside an unquoted field (quote the whole field and double the quote)");
    table_error_n("a,b\n1,x\0y\n", 10, "r.csv:2:4: NUL byte in a field");
    table_error_n("a,b\n1,\"x\0\"\n", 11, "r.csv:2:5: NUL byte in a field");
}
END_TEST

START_TEST(column_lookup)
{
    ts_table *t = table("point,tiles,clock,cycles,error\n0,4,1e9,100,\n");
    ts_err e;
    ts_err_init(&e);
    size_t c = 99;
    ck_assert_int_eq(ts_table_column(t, "clock", "--x", &c, &e), TS_OK);
    ck_assert_uint_eq(c, 2);
    ck_assert_int_eq(ts_table_column(t, "clok", "--x", &c, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "--x: r.csv has no column 'clok' (did you mean 'clock'?)");
    ck_assert_int_eq(ts_table_column(t, "Cycels", "--y", &c, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "--y: r.csv has no column 'Cycels' (did you mean 'cycles'?)");
    ck_assert_int_eq(ts_table_column(t, "energy.total_j", "--y", &c, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "--y: r.csv has no column 'energy.total_j' (its columns: point, tiles, clock, cycles, error)");
    ts_table_destroy(t);
    t = table("a,b,a\n1,2,3\n");
    ck_assert_int_eq(ts_table_column(t, "a", "--x", &c, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "--x: column 'a' appears twice in the header");
    ts_table_destroy(t);
    ts_err_free(&e);
}
END_TEST

START_TEST(numbers)
{
    ts_table *t = table("v\n12\n-1.5e-6\n\"\"\nabc\n1e999\nnan\n 1\n0x10\n");
    ts_err e;
    ts_err_init(&e);
    double v = 0;
    ck_assert_int_eq(ts_table_number(t, 0, 0, &v, &e), 0);
    ck_assert(v == 12);
    ck_assert_int_eq(ts_table_number(t, 1, 0, &v, &e), 0);
    ck_assert(v == -1.5e-6);
    v = 7;
    ck_assert_int_eq(ts_table_number(t, 2, 0, &v, &e), 1); /* empty: untouched */
    ck_assert(v == 7);
    ck_assert_int_eq(ts_table_number(t, 3, 0, &v, &e), -1);
    char buf[1200];
    ts_err_format(&e, buf, sizeof buf);
    ck_assert_str_eq(buf, "r.csv:5:1: column 'v': expected a number, got 'abc'");
    ck_assert_int_eq(ts_table_number(t, 4, 0, &v, &e), -1);
    ts_err_format(&e, buf, sizeof buf);
    ck_assert_str_eq(buf, "r.csv:6:1: column 'v': 1e999 is out of range");
    for (size_t r = 5; r < 8; r++)
        ck_assert_int_eq(ts_table_number(t, r, 0, &v, &e), -1);
    ts_err_free(&e);
    ts_table_destroy(t);
}
END_TEST

START_TEST(nice_numbers)
{
    ck_assert(ts_plot_nice(1.2, false) == 2);
    ck_assert(ts_plot_nice(4.9, false) == 5);
    ck_assert(ts_plot_nice(5, false) == 5);
    ck_assert(ts_plot_nice(5.1, false) == 10);
    ck_assert(ts_plot_nice(1000, false) == 1000);
    ck_assert(fabs(ts_plot_nice(0.073, false) - 0.1) < 1e-15);
    ck_assert(ts_plot_nice(2.4, true) == 2);
    ck_assert(ts_plot_nice(3.5, true) == 5);
    ck_assert(ts_plot_nice(7.3, true) == 10);
    ck_assert(ts_plot_nice(999.99, true) == 1000);
    ck_assert(fabs(ts_plot_nice(2.2e-7, true) - 2e-7) < 1e-21);
}
END_TEST

/* A step is 1, 2 or 5 times a power of ten. */
static int nice_step(double s)
{
    double e = floor(log10(s) + 1e-9), m = s / pow(10, e);
    return fabs(m - 1) < 1e-9 || fabs(m - 2) < 1e-9 || fabs(m - 5) < 1e-9;
}

START_TEST(linear_ticks)
{
    ts_plot_axis a;
    ts_plot_axis_linear(&a, 0, 100, 6);
    ck_assert(a.step == 20);
    ck_assert_uint_eq(a.nticks, 6);
    ck_assert(a.ticks[0] == 0 && a.ticks[5] == 100);
    ck_assert(a.lo < 0 && a.hi > 100 && !a.log);
    ts_plot_axis_linear(&a, 1e9, 1.5e9, 7);
    ck_assert(a.step == 1e8);
    ck_assert_uint_eq(a.nticks, 6);
    ck_assert(a.ticks[0] == 1e9 && a.ticks[5] == 1.5e9);
    /* a single value gets a range around it; zero too */
    ts_plot_axis_linear(&a, 120099, 120099, 6);
    ck_assert(a.lo < 120099 && a.hi > 120099 && a.nticks >= 3);
    ts_plot_axis_linear(&a, 0, 0, 6);
    ck_assert(a.lo < 0 && a.hi > 0 && a.nticks >= 3);
    /* the ends of the doubles: no endless search for ticks */
    ts_plot_axis_linear(&a, 0, 5e-324, 6);
    ck_assert(a.lo < 0 && a.hi > 0 && a.nticks >= 3);
    ts_plot_axis_linear(&a, -1.78e308, -1e307, 6); /* the margin would pass -DBL_MAX */
    ck_assert(isfinite(a.lo) && isfinite(a.hi) && a.nticks >= 3);
    for (size_t k = 0; k < a.nticks; k++)
        ck_assert(isfinite(a.ticks[k]) && a.ticks[k] >= a.lo && a.ticks[k] <= a.hi);
    ts_plot_axis_log(&a, 1e-300, 1.7e308);
    ck_assert(isfinite(a.lo) && isfinite(a.hi) && a.lo > 0 && a.nticks >= 3);
    ts_plot_axis_linear(&a, -1.5e308, 1.5e308, 6);
    ck_assert(a.nticks == 2 && a.ticks[0] == -1.5e308 && a.ticks[1] == 1.5e308);
    /* invariants over many ranges */
    srand(7);
    for (int i = 0; i < 2000; i++) {
        double m = pow(10, rand() % 30 - 15) * (rand() % 1000 + 1) / 100.0;
        double lo = (rand() % 2 ? -1 : 1) * m * (rand() % 100) / 50.0;
        double hi = lo + m * (rand() % 1000 + 1) / 100.0;
        int target = 3 + rand() % 10;
        ts_plot_axis_linear(&a, lo, hi, target);
        ck_assert_msg(nice_step(a.step), "step %g for [%g, %g]", a.step, lo, hi);
        ck_assert_msg(a.nticks >= 3 && a.nticks <= 2 * (size_t)target + 1, "%zu ticks for [%g, %g] target %d",
                      a.nticks, lo, hi, target);
        ck_assert(a.lo < lo && a.hi > hi);
        for (size_t k = 0; k < a.nticks; k++) {
            ck_assert(a.ticks[k] >= a.lo - a.step * 1e-6 && a.ticks[k] <= a.hi + a.step * 1e-6);
            if (k)
                ck_assert(fabs(a.ticks[k] - a.ticks[k - 1] - a.step) < a.step * 1e-6);
        }
    }
}
END_TEST

START_TEST(log_ticks)
{
    ts_plot_axis a;
    /* a geometric series of SRAM sizes: 1, 2 and 5 times powers of ten */
    ts_plot_axis_log(&a, 65536, 1048576);
    ck_assert(a.log);
    ck_assert_uint_eq(a.nticks, 4);
    ck_assert(a.ticks[0] == 1e5 && a.ticks[1] == 2e5 && a.ticks[2] == 5e5 && a.ticks[3] == 1e6);
    ck_assert(a.lo < 65536 && a.hi > 1048576);
    /* six decades: every power of ten */
    ts_plot_axis_log(&a, 1, 1e6);
    ck_assert_uint_eq(a.nticks, 7);
    for (size_t k = 0; k < 7; k++)
        ck_assert(fabs(a.ticks[k] / pow(10, (double)k) - 1) < 1e-12);
    /* eighteen decades: every third */
    ts_plot_axis_log(&a, 1e-9, 1e9);
    ck_assert_uint_eq(a.nticks, 7);
    ck_assert(fabs(a.ticks[0] / 1e-9 - 1) < 1e-9 && fabs(a.ticks[1] / 1e-6 - 1) < 1e-9);
    /* under half a decade: evenly spaced nice ticks */
    ts_plot_axis_log(&a, 1e9, 2e9);
    ck_assert(a.log && a.nticks >= 3 && nice_step(a.step));
    for (size_t k = 0; k < a.nticks; k++)
        ck_assert(a.ticks[k] >= a.lo && a.ticks[k] <= a.hi);
}
END_TEST

static const char *si(double v, double step)
{
    static char buf[64];
    ts_plot_si(v, step, buf, sizeof buf);
    return buf;
}

START_TEST(si_labels)
{
    ck_assert_str_eq(si(0, 1), "0");
    ck_assert_str_eq(si(1e-20, 0.5), "0");
    ck_assert_str_eq(si(42, 1), "42");
    ck_assert_str_eq(si(120000, 10000), "120k");
    ck_assert_str_eq(si(1.5e9, 5e8), "1.5G");
    ck_assert_str_eq(si(1.2e9, 1e8), "1.2G");
    ck_assert_str_eq(si(1e9, 1e8), "1.0G");
    ck_assert_str_eq(si(1.25e9, 2.5e8), "1.25G");
    ck_assert_str_eq(si(0.5, 0.1), "500m");
    ck_assert_str_eq(si(2.5e-7, 5e-8), "250n");
    ck_assert_str_eq(si(-2000, 1000), "-2k");
    ck_assert_str_eq(si(5.76e-6, 0), "5.76\xc2\xb5");
    ck_assert_str_eq(si(999.9996, 0), "1k");
    ck_assert_str_eq(si(1048576, 0), "1.05M");
    ck_assert_str_eq(si(3e18, 0), "3e+18");
    ck_assert_str_eq(si(7e15, 1e15), "7P");
    ck_assert_str_eq(si(-INFINITY, 0), "-inf");
}
END_TEST

/* Pareto by definition: no other point at least as good in both and better in one. */
static void brute_pareto(const double *a, const double *b, size_t n, bool ma, bool mb, bool *on)
{
    for (size_t i = 0; i < n; i++) {
        on[i] = true;
        for (size_t j = 0; j < n && on[i]; j++) {
            double ai = ma ? -a[i] : a[i], aj = ma ? -a[j] : a[j];
            double bi = mb ? -b[i] : b[i], bj = mb ? -b[j] : b[j];
            if (aj <= ai && bj <= bi && (aj < ai || bj < bi))
                on[i] = false;
        }
    }
}

START_TEST(pareto_fronts)
{
    const double a[] = {1, 2, 3, 4, 2, 5};
    const double b[] = {5, 3, 4, 1, 3, 1};
    bool on[6], oom;
    ck_assert_uint_eq(ts_plot_pareto(a, b, 6, false, false, on, &oom), 4);
    ck_assert(!oom);
    ck_assert(on[0] && on[1] && !on[2] && on[3] && on[4] && !on[5]); /* equal points both on it */
    /* maximise b: (1,5) and (5,1)... no: max b with min a is (1,5) alone */
    ck_assert_uint_eq(ts_plot_pareto(a, b, 6, false, true, on, &oom), 1);
    ck_assert(on[0]);
    /* maximise both: (5,1), (3,4), (1,5) */
    ck_assert_uint_eq(ts_plot_pareto(a, b, 6, true, true, on, &oom), 3);
    ck_assert(on[0] && on[2] && on[5] && !on[3]);
    ck_assert_uint_eq(ts_plot_pareto(a, b, 0, false, false, on, &oom), 0);
    /* against brute force, with many ties */
    srand(11);
    double x[200], y[200];
    bool got[200], want[200];
    for (int round = 0; round < 300; round++) {
        size_t n = 1 + (size_t)(rand() % 200);
        for (size_t i = 0; i < n; i++) {
            x[i] = rand() % 12;
            y[i] = rand() % 12;
        }
        bool ma = rand() % 2, mb = rand() % 2;
        size_t count = ts_plot_pareto(x, y, n, ma, mb, got, &oom);
        brute_pareto(x, y, n, ma, mb, want);
        size_t wc = 0;
        for (size_t i = 0; i < n; i++) {
            ck_assert_msg(got[i] == want[i], "round %d point %zu", round, i);
            wc += want[i];
        }
        ck_assert_uint_eq(count, wc);
    }
}
END_TEST

static const char sweep_csv[] =
    "point,workload,tiles,clock,cycles,energy.total_j,error\n"
    "0,loop.s,2,1000000000,,,\"program has a stream for tile 2, but the config has 2 tiles\"\n"
    "1,loop.s,8,1500000000,80,3e-6,\n"
    "2,loop.s,4,1000000000,100,2e-6,\n"
    "3,loop.s,8,1000000000,90,4e-6,\n"
    "4,loop.s,4,1500000000,70,2.5e-6,\n"
    "5,loop.s,16,1000000000,,,\n";

static ts_status prepare(ts_plot **p, const ts_table *t, ts_plot_opts o, ts_err *e)
{
    return ts_plot_prepare(p, t, &o, e);
}

START_TEST(plot_layout)
{
    ts_table *t = table(sweep_csv);
    ts_err e;
    ts_err_init(&e);
    ts_plot *p = NULL;
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "clock", .y = "cycles", .group = "tiles"}, &e), TS_OK);
    ck_assert_uint_eq(ts_plot_npoints(p), 4);
    ck_assert_uint_eq(ts_plot_nfailed(p), 1);
    ck_assert_uint_eq(ts_plot_nempty(p), 1);
    ck_assert_uint_eq(ts_plot_ngroups(p), 2);
    ck_assert_str_eq(ts_plot_group_name(p, 0), "4"); /* numeric order, not order of appearance */
    ck_assert_str_eq(ts_plot_group_name(p, 1), "8");
    ck_assert_str_eq(ts_plot_group_label(p, 1), "8");
    ck_assert_uint_eq(ts_plot_npareto(p), 0);
    ck_assert(!ts_plot_x_repeats(p));
    const ts_plot_axis *y = ts_plot_yaxis(p);
    ck_assert(y->lo < 70 && y->hi > 100 && !y->log);
    ts_plot_destroy(p);

    /* without groups, two rows share an x value: a line through them would zig-zag */
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "clock", .y = "cycles"}, &e), TS_OK);
    ck_assert(ts_plot_x_repeats(p));
    ck_assert_uint_eq(ts_plot_ngroups(p), 1);
    ts_plot_destroy(p);
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "clock", .y = "cycles", .scatter = true}, &e), TS_OK);
    ck_assert(!ts_plot_x_repeats(p));
    ts_plot_destroy(p);

    /* numeric groups read with SI prefixes in the legend, unless two would read the same */
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "tiles", .y = "cycles", .group = "clock"}, &e), TS_OK);
    ck_assert_str_eq(ts_plot_group_name(p, 1), "1500000000");
    ck_assert_str_eq(ts_plot_group_label(p, 1), "1.5G");
    ts_plot_destroy(p);
    ts_table *t2 = table("g,x,y\n1000,1,1\n1001,2,2\n");
    ck_assert_int_eq(prepare(&p, t2, (ts_plot_opts){.x = "x", .y = "y", .group = "g"}, &e), TS_OK);
    ck_assert_str_eq(ts_plot_group_label(p, 0), "1000");
    ck_assert_str_eq(ts_plot_group_label(p, 1), "1001");
    ts_plot_destroy(p);
    ts_table_destroy(t2);

    /* groups that are not all numbers keep their order of appearance */
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "clock", .y = "cycles", .group = "workload"}, &e), TS_OK);
    ck_assert_uint_eq(ts_plot_ngroups(p), 1);
    ts_plot_destroy(p);

    /* the Pareto front of cycles and energy: rows 4 (70, 2.5u) and 2 (100, 2u), by cycles */
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.pareto = "cycles,energy.total_j"}, &e), TS_OK);
    ck_assert_uint_eq(ts_plot_npareto(p), 2);
    ck_assert_uint_eq(ts_plot_pareto_row(p, 0), 4);
    ck_assert_uint_eq(ts_plot_pareto_row(p, 1), 2);
    ts_plot_destroy(p);
    /* maximising energy: row 3 (90, 4u) and row 4 (70, 2.5u) and row 1 (80, 3u) */
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "clock", .y = "cycles", .pareto = "cycles,max:energy.total_j"}, &e),
                     TS_OK);
    ck_assert_uint_eq(ts_plot_npareto(p), 3);
    ck_assert_uint_eq(ts_plot_pareto_row(p, 0), 4);
    ck_assert_uint_eq(ts_plot_pareto_row(p, 1), 1);
    ck_assert_uint_eq(ts_plot_pareto_row(p, 2), 3);
    ts_plot_destroy(p);

    /* log axes */
    ck_assert_int_eq(prepare(&p, t, (ts_plot_opts){.x = "tiles", .y = "cycles", .logx = true, .logy = true}, &e), TS_OK);
    ck_assert(ts_plot_xaxis(p)->log && ts_plot_yaxis(p)->log);
    ts_plot_destroy(p);
    ts_err_free(&e);
    ts_table_destroy(t);
}
END_TEST

static void plot_error(const char *csv, ts_plot_opts o, const char *want)
{
    ts_table *t = table(csv);
    ts_err e;
    ts_err_init(&e);
    ts_plot *p = NULL;
    ck_assert_int_eq(prepare(&p, t, o, &e), TS_EINPUT);
    ck_assert_ptr_null(p);
    char buf[1200];
    ts_err_format(&e, buf, sizeof buf);
    ck_assert_str_eq(buf, want);
    ts_err_free(&e);
    ts_table_destroy(t);
}

START_TEST(plot_errors)
{
    plot_error(sweep_csv, (ts_plot_opts){.x = "clok", .y = "cycles"}, "--x: r.csv has no column 'clok' (did you mean 'clock'?)");
    plot_error(sweep_csv, (ts_plot_opts){.x = "clock", .y = "cycles", .group = "tile"},
               "--group: r.csv has no column 'tile' (did you mean 'tiles'?)");
    plot_error(sweep_csv, (ts_plot_opts){.pareto = "cycles,energy"},
               "--pareto: r.csv has no column 'energy' (its columns: point, workload, tiles, clock, cycles, energy.total_j, error)");
    plot_error(sweep_csv, (ts_plot_opts){.pareto = "cycles"},
               "--pareto takes two columns, 'A,B' (each may start with 'max:'), got 'cycles'");
    plot_error(sweep_csv, (ts_plot_opts){.x = "clock"}, "a plot needs --x and --y (or --pareto A,B)");
    plot_error(sweep_csv, (ts_plot_opts){.x = "workload", .y = "cycles"},
               "r.csv:3:3: column 'workload': expected a number, got 'loop.s'");
    plot_error("a,b\n1,2\n0,3\n", (ts_plot_opts){.x = "a", .y = "b", .logx = true},
               "r.csv:3:1: --logx needs positive values, but column 'a' has 0");
    plot_error("a,b\n", (ts_plot_opts){.x = "a", .y = "b"}, "r.csv: no row to plot (the file has only a header)");
    plot_error("a,b,error\n1,2,boom\n3,,\n", (ts_plot_opts){.x = "a", .y = "b"},
               "r.csv: no row to plot (1 with an error, 1 without a value)");
    ts_buf many = TS_BUF_INIT;
    ts_buf_puts(&many, "g,x,y\n");
    for (int i = 0; i < 30; i++)
        ts_buf_printf(&many, "%d,1,2\n", i);
    plot_error(many.data, (ts_plot_opts){.x = "x", .y = "y", .group = "g"},
               "--group: column 'g' has more than 24 values, too many for a legend");
    ts_buf_free(&many);
}
END_TEST

/* Every allocation that fails is reported as out of memory, and nothing leaks (ASan). */
START_TEST(out_of_memory)
{
    bool done = false;
    for (long n = 1; n < 500 && !done; n++) {
        ts_alloc_fail_after(n);
        ts_err e;
        ts_err_init(&e);
        ts_table *t = NULL;
        ts_plot *p = NULL;
        ts_status st = ts_table_parse(&t, "r.csv", sweep_csv, strlen(sweep_csv), &e);
        if (st == TS_OK) {
            ts_plot_opts o = {.x = "clock", .y = "cycles", .group = "tiles", .pareto = "cycles,energy.total_j"};
            st = ts_plot_prepare(&p, t, &o, &e);
        }
        long failures = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (failures)
            ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d (%s)", n, st, e.msg);
        else
            done = st == TS_OK;
        ts_plot_destroy(p);
        ts_table_destroy(t);
        ts_err_free(&e);
    }
    ck_assert(done);
}
END_TEST

/* ---- PNGs, by pixel statistics ---- */

#if TS_HAVE_CAIRO
typedef struct img {
    int w, h;
    int fx0, fy0, fx1, fy1; /* the frame: its ink edges */
    cairo_surface_t *s;
} img;

static uint32_t px(const img *m, int x, int y)
{
    const unsigned char *d = cairo_image_surface_get_data(m->s);
    return *(const uint32_t *)(d + (size_t)y * (size_t)cairo_image_surface_get_stride(m->s) + 4 * (size_t)x) &
           0xffffff;
}

static int img_load(img *m, const char *path)
{
    m->s = cairo_image_surface_create_from_png(path);
    if (cairo_surface_status(m->s) != CAIRO_STATUS_SUCCESS)
        return -1;
    cairo_surface_flush(m->s);
    m->w = cairo_image_surface_get_width(m->s);
    m->h = cairo_image_surface_get_height(m->s);
    /* the frame's edges are the rows and columns with the longest runs of the ink colour */
    m->fx0 = m->fy0 = -1;
    m->fx1 = m->fy1 = -1;
    for (int y = 0; y < m->h; y++) {
        int n = 0;
        for (int x = 0; x < m->w; x++)
            n += px(m, x, y) == 0x262626;
        if (n > m->w / 2) {
            if (m->fy0 < 0)
                m->fy0 = y;
            m->fy1 = y;
        }
    }
    for (int x = 0; x < m->w; x++) {
        int n = 0;
        for (int y = 0; y < m->h; y++)
            n += px(m, x, y) == 0x262626;
        if (n > m->h / 2) {
            if (m->fx0 < 0)
                m->fx0 = x;
            m->fx1 = x;
        }
    }
    return 0;
}

/* Pixels inside the frame within tol of colour rgb in every channel. */
static long count_inside(const img *m, uint32_t rgb, int tol)
{
    long n = 0;
    for (int y = m->fy0 + 1; y < m->fy1; y++)
        for (int x = m->fx0 + 1; x < m->fx1; x++) {
            uint32_t p = px(m, x, y);
            int ok = 1;
            for (int sh = 0; sh < 24 && ok; sh += 8)
                ok = abs((int)((p >> sh) & 255) - (int)((rgb >> sh) & 255)) <= tol;
            n += ok;
        }
    return n;
}
#endif

#if TS_HAVE_CAIRO
/* A PNG written (st) at path of w x h pixels, loaded into m. */
static void png_written(img *m, ts_status st, const ts_err *e, const char *path, int w, int h)
{
    ck_assert_msg(st == TS_OK, "%s", e->msg);
    ck_assert_int_eq(img_load(m, path), 0);
    ck_assert_int_eq(m->w, w);
    ck_assert_int_eq(m->h, h);
}
#endif

START_TEST(png_by_pixels)
{
    ts_table *t = table(sweep_csv);
    ts_err e;
    ts_err_init(&e);
    ts_plot *p = NULL;
    ts_plot_opts o = {.x = "clock", .y = "cycles", .group = "tiles", .pareto = "cycles,energy.total_j",
                      .width = 640, .height = 400};
    ck_assert_int_eq(ts_plot_prepare(&p, t, &o, &e), TS_OK);
    char dir[] = "/tmp/ts_plot_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/p.png", dir);
    ts_status st = ts_plot_write_png(p, path, &e);
#if TS_HAVE_CAIRO
    img m;
    png_written(&m, st, &e, path, 640, 400);
    ck_assert_msg(m.fx0 > 40 && m.fx1 < 640 - 60 && m.fy0 > 20 && m.fy1 < 400 - 30, "frame %d,%d %d,%d", m.fx0,
                  m.fy0, m.fx1, m.fy1);
    ck_assert_int_gt(count_inside(&m, ts_plot_group_rgb(0), 0), 30);
    ck_assert_int_gt(count_inside(&m, ts_plot_group_rgb(1), 0), 30);
    ck_assert_int_eq(count_inside(&m, ts_plot_group_rgb(2), 0), 0);
    ck_assert_int_gt(count_inside(&m, TS_PLOT_PARETO_RGB, 20), 20);
    cairo_surface_destroy(m.s);
#else
    ck_assert_int_eq(st, TS_EINPUT);
    ck_assert(strstr(e.msg, "no cairo"));
    ck_assert(access(path, F_OK) != 0);
#endif
    unlink(path);
    rmdir(dir);
    ts_plot_destroy(p);
    ts_table_destroy(t);
    ts_err_free(&e);
}
END_TEST

/* The roofline by pixels: the roofs where the peak and bandwidth put them, a marker on each
 * layer's point and on the run's. */
START_TEST(roofline_by_pixels)
{
    const double x[3] = {0.5, 4, 40}, y[3] = {20, 150, 700}; /* ops/B and ops/cycle */
    ts_roofline r = {.title = "roofline: test", .peak_ops = 1000, .bw = 100, .x = x, .y = y, .n = 3,
                     .run_x = 2, .run_y = 100, .width = 640, .height = 420};
    ts_err e;
    ts_err_init(&e);
    char dir[] = "/tmp/ts_roof_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/r.png", dir);
    ts_status st = ts_roofline_write_png(&r, path, &e);
#if TS_HAVE_CAIRO
    img m;
    png_written(&m, st, &e, path, 640, 420);
    double px0, py0;
    for (size_t i = 0; i < 3; i++) { /* a layer's marker at its point */
        ck_assert_int_eq(ts_roofline_map(&r, x[i], y[i], &px0, &py0), 0);
        ck_assert_msg(px(&m, (int)px0, (int)py0) == TS_ROOF_LAYER_RGB, "layer %zu at %.0f,%.0f: %06x", i, px0, py0,
                      px(&m, (int)px0, (int)py0));
    }
    ck_assert_int_eq(ts_roofline_map(&r, 2, 100, &px0, &py0), 0);
    ck_assert_uint_eq(px(&m, (int)px0, (int)py0), TS_ROOF_RUN_RGB);
    /* the roofs: slanted below the ridge (10 ops/B), flat at the peak after it; nothing of the
     * roof colour far below them */
    static const double on[][2] = {{1, 100}, {3, 300}, {20, 1000}, {60, 1000}};
    for (size_t i = 0; i < 4; i++) {
        ck_assert_int_eq(ts_roofline_map(&r, on[i][0], on[i][1], &px0, &py0), 0);
        bool hit = false;
        for (int dy = -2; dy <= 2; dy++)
            hit |= px(&m, (int)px0, (int)py0 + dy) == TS_ROOF_RGB;
        ck_assert_msg(hit, "no roof at %g ops/B, %g ops/cycle", on[i][0], on[i][1]);
    }
    ck_assert_int_eq(ts_roofline_map(&r, 60, 50, &px0, &py0), 0);
    ck_assert_uint_ne(px(&m, (int)px0, (int)py0), TS_ROOF_RGB);
    ck_assert_int_gt(count_inside(&m, TS_ROOF_RGB, 0), 400);
    cairo_surface_destroy(m.s);
#else
    ck_assert_int_eq(st, TS_EINPUT);
#endif
    unlink(path);
    /* no peak: nothing to draw under */
    r.peak_ops = 0;
    ck_assert_int_eq(ts_roofline_write_png(&r, path, &e), TS_EINPUT);
    ck_assert_int_ne(access(path, F_OK), 0);
    rmdir(dir);
    ts_err_free(&e);
}
END_TEST

/* The link heat map by pixels: on a 4 x 3 mesh, the busiest link (PE (1, 1) east, half the
 * cycles) in the colour bar's top colour, a quieter one (PE (2, 0) south) in neither that nor the
 * idle grey, a link that carried nothing in the idle grey; links off the mesh have no bar. */
START_TEST(links_by_pixels)
{
    double east[12] = {0}, south[12] = {0};
    east[1 * 4 + 1] = 500;
    south[0 * 4 + 2] = 100;
    ts_links l = {.title = "links: test", .mw = 4, .mh = 3, .cycles = 1000, .width = 640, .height = 480};
    l.sent[TS_LINK_S] = south;
    l.sent[TS_LINK_E] = east;
    double top, px0, py0;
    ck_assert_int_eq(ts_links_scale(&l, &top), 0);
    ck_assert_double_eq_tol(top, 0.5, 1e-12);
    ck_assert_int_eq(ts_links_map(&l, 3, 0, TS_LINK_E, &px0, &py0), -1); /* off the east edge */
    ck_assert_int_eq(ts_links_map(&l, 1, 0, TS_LINK_N, &px0, &py0), -1); /* off the north edge */
    ck_assert_int_eq(ts_links_map(&l, 4, 0, TS_LINK_W, &px0, &py0), -1); /* no such PE */
    ts_err e;
    ts_err_init(&e);
    char dir[] = "/tmp/ts_links_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/l.png", dir);
    ts_status st = ts_links_write_png(&l, path, &e);
#if TS_HAVE_CAIRO
    img m;
    png_written(&m, st, &e, path, 640, 480);
    ck_assert_int_eq(ts_links_map(&l, 1, 1, TS_LINK_E, &px0, &py0), 0);
    ck_assert_uint_eq(px(&m, (int)px0, (int)py0), TS_LINKS_HIGH_RGB);
    ck_assert_int_eq(ts_links_map(&l, 2, 0, TS_LINK_S, &px0, &py0), 0);
    uint32_t quiet = px(&m, (int)px0, (int)py0);
    ck_assert_msg(quiet != TS_LINKS_HIGH_RGB && quiet != TS_LINKS_IDLE_RGB && quiet != 0xffffffu, "%06x", quiet);
    /* the same link's other direction (PE (2, 1) north) and a west link carried nothing */
    ck_assert_int_eq(ts_links_map(&l, 2, 1, TS_LINK_N, &px0, &py0), 0);
    ck_assert_uint_eq(px(&m, (int)px0, (int)py0), TS_LINKS_IDLE_RGB);
    ck_assert_int_eq(ts_links_map(&l, 2, 1, TS_LINK_W, &px0, &py0), 0);
    ck_assert_uint_eq(px(&m, (int)px0, (int)py0), TS_LINKS_IDLE_RGB);
    /* the colour bar, right of the map: its bottom row the ramp's low end, its top row the high */
    long low = 0, high = 0;
    for (int y = 0; y < m.h; y++)
        for (int x = (int)px0 + 100; x < m.w; x++) {
            low += px(&m, x, y) == TS_LINKS_LOW_RGB;
            high += px(&m, x, y) == TS_LINKS_HIGH_RGB;
        }
    ck_assert_int_ge(low, 10);
    ck_assert_int_ge(high, 10);
    cairo_surface_destroy(m.s);
#else
    ck_assert_int_eq(st, TS_EINPUT);
#endif
    unlink(path);
    /* no cycles: nothing to draw */
    l.cycles = 0;
    ck_assert_int_eq(ts_links_write_png(&l, path, &e), TS_EINPUT);
    ck_assert_int_ne(access(path, F_OK), 0);
    rmdir(dir);
    ts_err_free(&e);
}
END_TEST

/* ---- the command line: a small sweep, then `tessera plot` ---- */

static const char *tessera(void) { return getenv("TS_TESSERA"); }

static const char *src(void)
{
    const char *r = getenv("TS_SOURCE_ROOT");
    return r ? r : ".";
}

/* Run a shell command; its exit status. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

START_TEST(cli_sweep_then_plot)
{
    /* main() skipped this part when the build has no ipu family: here the build has it */
    ck_assert_msg(tessera() != NULL, "TS_TESSERA is not set (meson sets it to the tessera it built)");
    ck_assert_msg(!sh("'%s' config --list | grep -q '^  ipu '", tessera()),
                  "the build compiled the ipu family, but 'tessera config --list' does not list it");
    char dir[] = "/tmp/ts_plot_cli_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    /* the README's example: 14 points, every one runs */
    ck_assert_int_eq(sh("'%s' sweep '%s/tests/sweep/plot.yaml' -o %s/r.csv -q 2>/dev/null", tessera(), src(), dir), 0);
    int rc = sh("'%s' plot %s/r.csv --x clock --y energy.total_j --group energy.static_power -o %s/lines.png "
                "--size 700x450 >%s/out 2>%s/err",
                tessera(), dir, dir, dir, dir);
    char path[512];
    snprintf(path, sizeof path, "%s/err", dir);
#if TS_HAVE_CAIRO
    ck_assert_int_eq(rc, 0);
    ck_assert_msg(!strstr(slurp(path), "with an error skipped"), "%s", slurp(path));
    /* rows with an error are left out of a plot, and it says how many: the same sweep on 2 tiles
     * too, where the 4-stream program fails */
    ck_assert_int_eq(sh("sed 's/^axes:/axes:\\n  tiles: [2, 4]/; s#\\[loop.s\\]#[%s/tests/sweep/loop.s]#' "
                        "'%s/tests/sweep/plot.yaml' >%s/two.yaml && '%s' sweep %s/two.yaml -o %s/two.csv -q 2>/dev/null",
                        src(), src(), dir, tessera(), dir, dir), 1);
    ck_assert_int_eq(sh("'%s' plot %s/two.csv --x clock --y energy.total_j -o %s/two.png >/dev/null 2>%s/err2",
                        tessera(), dir, dir, dir), 0);
    snprintf(path, sizeof path, "%s/err2", dir);
    ck_assert_msg(strstr(slurp(path), "14 rows with an error skipped"), "%s", slurp(path));
    snprintf(path, sizeof path, "%s/out", dir);
    ck_assert_msg(strstr(slurp(path), "lines.png: 14 points in 4 groups"), "%s", slurp(path));
    img m;
    snprintf(path, sizeof path, "%s/lines.png", dir);
    ck_assert_int_eq(img_load(&m, path), 0);
    ck_assert_int_eq(m.w, 700);
    ck_assert_int_eq(m.h, 450);
    for (size_t g = 0; g < 4; g++) /* every group's markers inside the frame */
        ck_assert_msg(count_inside(&m, ts_plot_group_rgb(g), 0) > 25, "group %zu: %ld pixels", g,
                      count_inside(&m, ts_plot_group_rgb(g), 0));
    ck_assert_int_eq(count_inside(&m, ts_plot_group_rgb(4), 0), 0);
    ck_assert_int_eq(count_inside(&m, TS_PLOT_PARETO_RGB, 20), 0); /* no front asked for */
    cairo_surface_destroy(m.s);

    /* the Pareto front of time and energy: three points (2 GHz at 1 W, 1.5 GHz at 0.5 W, 1 GHz at
     * 0.25 W), by increasing time */
    rc = sh("'%s' plot %s/r.csv --pareto time_s,energy.total_j --group energy.static_power -o %s/pareto.png "
            ">%s/out 2>/dev/null",
            tessera(), dir, dir, dir);
    ck_assert_int_eq(rc, 0);
    snprintf(path, sizeof path, "%s/out", dir);
    ck_assert_msg(strstr(slurp(path), "Pareto front of time_s,energy.total_j: 3 of 14 rows\n"
                                      "point,workload,clock,energy.static_power,cycles,time_s,energy.total_j\n"
                                      "18,loop.s,2000000000,1,120099,6.00495e-5,6.5809924e-5\n"
                                      "9,loop.s,1500000000,0.5,120099,8.0066e-5,4.5793424e-5\n"
                                      "0,loop.s,1000000000,0.25,120099,0.000120099,3.5785174e-5\n"),
                  "%s", slurp(path));
    snprintf(path, sizeof path, "%s/pareto.png", dir);
    ck_assert_int_eq(img_load(&m, path), 0);
    ck_assert_int_eq(m.w, 800);
    ck_assert_int_eq(m.h, 500);
    ck_assert_int_gt(count_inside(&m, TS_PLOT_PARETO_RGB, 20), 60);
    for (size_t g = 0; g < 4; g++)
        ck_assert_int_gt(count_inside(&m, ts_plot_group_rgb(g), 0), 25);
    cairo_surface_destroy(m.s);
#else
    ck_assert_int_eq(rc, 2);
    ck_assert(strstr(slurp(path), "this build has no cairo"));
#endif
    /* input errors exit 2 and write nothing */
    rc = sh("'%s' plot %s/r.csv --x clok --y cycles -o %s/never.png 2>%s/err", tessera(), dir, dir, dir);
    ck_assert_int_eq(rc, 2);
    snprintf(path, sizeof path, "%s/err", dir);
    ck_assert_msg(strstr(slurp(path), "has no column 'clok' (did you mean 'clock'?)\n"), "%s", slurp(path));
    snprintf(path, sizeof path, "%s/never.png", dir);
    ck_assert(access(path, F_OK) != 0);
    sh("rm -rf '%s'", dir);
}
END_TEST

/* Whether the space-separated list has word w. */
static bool has_word(const char *list, const char *w)
{
    size_t n = strlen(w);
    for (const char *p = list; (p = strstr(p, w)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return true;
    return false;
}

/* The pure parts; with `cli`, the command line end to end instead (a meson test of its own, skipped
 * with 77 when the build has no ipu family: its sweep runs IPU points). */
static Suite *suite(bool cli)
{
    Suite *s = suite_create("plot");
    TCase *c;
    if (cli) {
        c = tcase_create("cli");
        tcase_add_test(c, cli_sweep_then_plot);
        suite_add_tcase(s, c);
        return s;
    }
    c = tcase_create("table");
    tcase_add_test(c, table_fields_quotes_and_positions);
    tcase_add_test(c, table_errors);
    tcase_add_test(c, column_lookup);
    tcase_add_test(c, numbers);
    suite_add_tcase(s, c);
    c = tcase_create("axes");
    tcase_add_test(c, nice_numbers);
    tcase_add_test(c, linear_ticks);
    tcase_add_test(c, log_ticks);
    tcase_add_test(c, si_labels);
    tcase_add_test(c, pareto_fronts);
    suite_add_tcase(s, c);
    c = tcase_create("plot");
    tcase_add_test(c, plot_layout);
    tcase_add_test(c, plot_errors);
    tcase_add_test(c, out_of_memory);
    tcase_add_test(c, png_by_pixels);
    tcase_add_test(c, roofline_by_pixels);
    tcase_add_test(c, links_by_pixels);
    suite_add_tcase(s, c);
    return s;
}

int main(int argc, char **argv)
{
    bool cli = argc > 1 && !strcmp(argv[1], "cli");
    const char *fams = getenv("TS_FAMILIES");
    if (cli && fams && !has_word(fams, "ipu")) {
        printf("SKIP: test_plot cli: this build has no ipu family (built: %s)\n", fams);
        return 77;
    }
    SRunner *r = srunner_create(suite(cli));
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
