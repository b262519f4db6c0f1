/* tests/test_trace.c — the Chrome trace writer: events, order, exact microseconds, the size
 * bound with drop counting, temporary files; and the trace of a BSP run on the IPU (one track per
 * tile, ordered compute / exchange / sync slices that add up to each superstep of the report).
 * Every trace is parsed back with jansson. */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/registry.h"
#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/config.h"
#include "core/fileio.h"
#include "core/program.h"
#include "core/sim.h"
#include "core/stats.h"
#include "core/trace.h"

static char dir[64];
static char path[128];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/ts_trace_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/trace.json", dir);
}

/* Nothing but the expected files may be left in the directory. */
static int entries(void)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}

static void teardown(void)
{
    remove(path);
    rmdir(dir);
}

static char *slurp(size_t *len)
{
    ts_err e;
    ts_err_init(&e);
    char *data;
    ck_assert_int_eq(ts_read_file(path, &data, len, &e), TS_OK);
    return data;
}

static json_t *load(void)
{
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    ck_assert_msg(root != NULL, "invalid json at %d:%d: %s", je.line, je.column, je.text);
    ck_assert_str_eq(json_string_value(json_object_get(root, "displayTimeUnit")), "ns");
    ck_assert(json_is_array(json_object_get(root, "traceEvents")));
    ck_assert(json_is_object(json_object_get(root, "otherData")));
    return root;
}

static const char *sget(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_string(v), "%s is not a string", k);
    return json_string_value(v);
}

static double nget(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_number(v), "%s is not a number", k);
    return json_number_value(v);
}

START_TEST(test_events)
{
    ts_err e;
    ts_err_init(&e);
    ts_trace *t;
    ck_assert_int_eq(ts_trace_open(&t, path, 1.6e9, 0, &e), TS_OK); /* 625 ps per cycle */
    ts_trace_process(t, 0, "ipu0");
    ts_trace_thread(t, 0, 3, "tile 3");
    ts_trace_thread(t, 0, 4, "tile \"4\"");
    ts_trace_slice(t, 0, 3, "compute", "phase", 1, 3, "{\"superstep\":3}");
    ts_trace_slice(t, 0, 4, "exchange", NULL, 1600000000ULL, 1600, NULL);
    ts_trace_counter(t, 0, "bytes in flight", 8, 4096.5);
    ts_trace_slice(t, 0, 3, "sync", "phase", 1000000000000ULL, 1, "not an object");
    ck_assert_uint_eq(ts_trace_dropped(t), 0);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    ck_assert_int_eq(entries(), 1); /* no temporary file left */

    json_t *root = load();
    json_t *ev = json_object_get(root, "traceEvents");
    ck_assert_uint_eq(json_array_size(ev), 7);
    /* Metadata. */
    json_t *m = json_array_get(ev, 0);
    ck_assert_str_eq(sget(m, "ph"), "M");
    ck_assert_str_eq(sget(m, "name"), "process_name");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "pid")), 0);
    ck_assert_str_eq(sget(json_object_get(m, "args"), "name"), "ipu0");
    m = json_array_get(ev, 2);
    ck_assert_str_eq(sget(m, "name"), "thread_name");
    ck_assert_int_eq(json_integer_value(json_object_get(m, "tid")), 4);
    ck_assert_str_eq(sget(json_object_get(m, "args"), "name"), "tile \"4\"");
    /* Slices in call order, in microseconds. */
    json_t *s = json_array_get(ev, 3);
    ck_assert_str_eq(sget(s, "ph"), "X");
    ck_assert_str_eq(sget(s, "name"), "compute");
    ck_assert_str_eq(sget(s, "cat"), "phase");
    ck_assert_double_eq(nget(s, "ts"), 0.000625);
    ck_assert_double_eq(nget(s, "dur"), 0.001875);
    ck_assert_int_eq(json_integer_value(json_object_get(s, "tid")), 3);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(s, "args"), "superstep")), 3);
    s = json_array_get(ev, 4);
    ck_assert_str_eq(sget(s, "name"), "exchange");
    ck_assert_ptr_null(json_object_get(s, "cat"));
    ck_assert_ptr_null(json_object_get(s, "args"));
    ck_assert_double_eq(nget(s, "ts"), 1e6); /* one second */
    ck_assert_double_eq(nget(s, "dur"), 1);
    json_t *c = json_array_get(ev, 5);
    ck_assert_str_eq(sget(c, "ph"), "C");
    ck_assert_str_eq(sget(c, "name"), "bytes in flight");
    ck_assert_double_eq(nget(c, "ts"), 0.005);
    ck_assert_double_eq(nget(json_object_get(c, "args"), "value"), 4096.5);
    s = json_array_get(ev, 6);
    ck_assert_double_eq(nget(s, "ts"), 625000000.0); /* 10^12 cycles */
    ck_assert_ptr_null(json_object_get(s, "args"));  /* text that is no object is left out */
    json_t *od = json_object_get(root, "otherData");
    ck_assert_int_eq(json_integer_value(json_object_get(od, "dropped_events")), 0);
    ck_assert_double_eq(nget(od, "clock_hz"), 1.6e9);
    json_decref(root);

    /* The text itself: exact decimals, no exponent. */
    size_t len;
    char *text = slurp(&len);
    ck_assert_ptr_nonnull(strstr(text, "\"ts\":0.000625,\"dur\":0.001875,"));
    ck_assert_ptr_nonnull(strstr(text, "\"ts\":1000000,\"dur\":1,"));
    ck_assert_ptr_nonnull(strstr(text, "\"ts\":625000000,\"dur\":0.000625,"));
    ts_free(text);
    ts_err_free(&e);
}
END_TEST

/* A clock whose period is no whole number of picoseconds: times round to the picosecond, and
 * slices that abut in cycles abut in the trace. */
/* Slices of the chip (process 0) carry the layers named before the run: by the superstep of their
 * arguments, or by their start cycle (overlapping layers joined); other processes' slices do not. */
START_TEST(test_layers)
{
    ts_err e;
    ts_err_init(&e);
    ts_trace *t;
    ck_assert_int_eq(ts_trace_open(&t, path, 1e9, 0, &e), TS_OK);
    ck_assert_int_eq(ts_trace_layer(t, TS_TRACE_BY_SUPERSTEP, 0, 1, "Conv conv1"), TS_OK);
    ck_assert_int_eq(ts_trace_layer(t, TS_TRACE_BY_CYCLE, 100, 200, "Relu a"), TS_OK);
    ck_assert_int_eq(ts_trace_layer(t, TS_TRACE_BY_CYCLE, 150, 300, "Add b"), TS_OK);
    ts_trace_slice(t, 0, 1, "s1", NULL, 5, 1, "{\"superstep\":1}");  /* conv1 */
    ts_trace_slice(t, 0, 1, "s2", NULL, 5, 1, "{\"superstep\":2}");  /* none */
    ts_trace_slice(t, 0, 1, "q1", NULL, 160, 1, NULL);              /* both cycle layers */
    ts_trace_slice(t, 0, 1, "q2", NULL, 250, 1, NULL);              /* Add b */
    ts_trace_slice(t, 2, 1, "other", NULL, 160, 1, NULL);           /* not the chip's */
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    json_t *root = load();
    json_t *ev = json_object_get(root, "traceEvents");
    ck_assert_uint_eq(json_array_size(ev), 5);
    const char *want[5] = {"Conv conv1", NULL, "Relu a, Add b", "Add b", NULL};
    for (size_t i = 0; i < 5; i++) {
        json_t *layer = json_object_get(json_object_get(json_array_get(ev, i), "args"), "layer");
        if (want[i])
            ck_assert_str_eq(json_string_value(layer), want[i]);
        else
            ck_assert_ptr_null(layer);
    }
    json_decref(root);
}
END_TEST

START_TEST(test_rounding)
{
    ts_err e;
    ts_err_init(&e);
    ts_trace *t;
    ck_assert_int_eq(ts_trace_open(&t, path, 9e8, 0, &e), TS_OK); /* 1111.1 ps per cycle */
    ts_trace_slice(t, 1, 1, "a", NULL, 1, 1, NULL);
    ts_trace_slice(t, 1, 1, "b", NULL, 2, 3, NULL);
    ts_trace_slice(t, 1, 1, "c", NULL, 5, 4, NULL);
    /* 2^40 cycles at 900 MHz = 1221.7...s; checks the split arithmetic on large counts. */
    ts_trace_slice(t, 1, 1, "d", NULL, 1099511627776ULL, 1, NULL);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    size_t len;
    char *text = slurp(&len);
    /* 1111.1 -> 1111 ps; 2222.2 -> 2222; 5555.6 -> 5556; 9999.99 -> 10000. */
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"a\",\"ph\":\"X\",\"ts\":0.001111,\"dur\":0.001111,"));
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"b\",\"ph\":\"X\",\"ts\":0.002222,\"dur\":0.003334,"));
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"c\",\"ph\":\"X\",\"ts\":0.005556,\"dur\":0.004444,"));
    /* 1099511627776 / 9e8 s = 1221.679586417777... s -> 1221679586.417778 us. */
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"d\",\"ph\":\"X\",\"ts\":1221679586.417778,\"dur\":0.001111,"));
    ts_free(text);

    /* A clock that is not a whole number of hertz takes the floating-point path. */
    ck_assert_int_eq(ts_trace_open(&t, path, 1e9 / 3, 0, &e), TS_OK);
    ts_trace_slice(t, 0, 0, "x", NULL, 1, 2, NULL);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    text = slurp(&len);
    ck_assert_ptr_nonnull(strstr(text, "\"ts\":0.003,\"dur\":0.006,"));
    ts_free(text);
    json_decref(load());
    ts_err_free(&e);
}
END_TEST

START_TEST(test_size_bound)
{
    ts_err e;
    ts_err_init(&e);
    ts_trace *t;
    const uint64_t max = 4000;
    ck_assert_int_eq(ts_trace_open(&t, path, 1e9, max, &e), TS_OK);
    ts_trace_process(t, 7, "chip");
    for (int i = 0; i < 500; i++)
        ts_trace_slice(t, 7, i % 4, "step", "phase", (uint64_t)i * 10, 10, "{\"i\":1}");
    uint64_t dropped = ts_trace_dropped(t);
    ck_assert_uint_gt(dropped, 400);
    ck_assert_uint_lt(dropped, 500);
    ts_trace_counter(t, 7, "c", 5, 1); /* dropped too */
    ck_assert_uint_eq(ts_trace_dropped(t), dropped + 1);
    ts_trace_thread(t, 7, 2, "late name"); /* metadata is still written */
    ck_assert_uint_eq(ts_trace_dropped(t), dropped + 1);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);

    size_t len;
    char *text = slurp(&len);
    ck_assert_uint_le(len, max + 200); /* the bound, plus the one metadata event past it */
    ts_free(text);
    json_t *root = load();
    json_t *ev = json_object_get(root, "traceEvents");
    size_t n = json_array_size(ev);
    ck_assert_uint_eq(n, 1 + (500 - dropped) + 1);
    /* The kept slices are the first ones, in order. */
    for (size_t i = 1; i + 1 < n; i++)
        ck_assert_double_eq(nget(json_array_get(ev, i), "ts"), (double)(i - 1) / 100.0);
    ck_assert_str_eq(sget(json_array_get(ev, n - 1), "name"), "thread_name");
    json_t *od = json_object_get(root, "otherData");
    ck_assert_int_eq(json_integer_value(json_object_get(od, "dropped_events")), (long long)dropped + 1);
    json_decref(root);
    ts_err_free(&e);
}
END_TEST

START_TEST(test_errors_and_abort)
{
    ts_err e;
    ts_err_init(&e);
    ts_trace *t = (ts_trace *)1;
    char bad[160];
    snprintf(bad, sizeof bad, "%s/missing/trace.json", dir);
    ck_assert_int_eq(ts_trace_open(&t, bad, 1e9, 0, &e), TS_EIO);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(e.file, bad);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot write trace"));
    ck_assert_int_eq(ts_trace_open(&t, path, 0, 0, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "trace clock 0 Hz is not a positive frequency");
    ck_assert_int_eq(ts_trace_open(&t, "", 1e9, 0, &e), TS_EINPUT);

    /* Abort leaves neither the trace nor its temporary file. */
    ck_assert_int_eq(ts_trace_open(&t, path, 1e9, 0, &e), TS_OK);
    ts_trace_slice(t, 0, 0, "x", NULL, 0, 1, NULL);
    ck_assert_int_eq(entries(), 1); /* the temporary file */
    ts_trace_abort(t);
    ck_assert_int_eq(entries(), 0);

    /* Closing onto a directory fails and removes the temporary file. */
    char sub[160];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    ck_assert_int_eq(mkdir(sub, 0700), 0);
    ck_assert_int_eq(ts_trace_open(&t, sub, 1e9, 0, &e), TS_OK);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_EIO);
    ck_assert_int_eq(entries(), 1); /* just sub */
    rmdir(sub);

    /* Tracing off: a NULL trace ignores everything. */
    ts_trace_process(NULL, 0, "x");
    ts_trace_thread(NULL, 0, 0, "x");
    ts_trace_slice(NULL, 0, 0, "x", NULL, 0, 1, NULL);
    ts_trace_counter(NULL, 0, "x", 0, 1);
    ck_assert_uint_eq(ts_trace_dropped(NULL), 0);
    ck_assert_int_eq(ts_trace_close(NULL, &e), TS_OK);
    ts_trace_abort(NULL);

    /* Out of memory when opening. */
    for (long n = 1; n <= 3; n++) {
        ts_alloc_fail_after(n);
        ts_status st = ts_trace_open(&t, path, 1e9, 0, &e);
        ts_alloc_fail_after(0);
        ck_assert_int_eq(st, TS_ENOMEM);
        ck_assert_ptr_null(t);
    }
    ck_assert_int_eq(entries(), 0);
    ts_err_free(&e);
}
END_TEST

/* An empty trace is still a valid file. */
START_TEST(test_empty)
{
    ts_err e;
    ts_err_init(&e);
    ts_trace *t;
    ck_assert_int_eq(ts_trace_open(&t, path, 1e9, 0, &e), TS_OK);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    json_t *root = load();
    ck_assert_uint_eq(json_array_size(json_object_get(root, "traceEvents")), 0);
    json_decref(root);
    ts_err_free(&e);
}
END_TEST

/* Run the default workload on ipu_mk1 traced into `path` with a size limit (0: the default);
 * nothing may be dropped. Fills res and the chip's clock. */
static void traced_default_run(uint64_t limit, ts_results *res, double *clock_hz)
{
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find("ipu");
    ck_assert_ptr_nonnull(fam);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    ck_assert_int_eq(ts_config_load(&cfg, "ipu_mk1", &co, &e), TS_OK);
    ts_info info;
    ck_assert_int_eq(fam->info(ts_config_data(cfg), &info, &e), TS_OK);
    const char *text;
    size_t len;
    ck_assert_int_eq(ts_builtin_find("ipu_default", &text, &len), 0);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_asm(&p, "ipu_default", text, len, fam->isa, &e), TS_OK);
    ts_trace *t;
    ck_assert_int_eq(ts_trace_open(&t, path, info.clock_hz, limit, &e), TS_OK);
    ts_run_opts ro = {.trace = t};
    ck_assert_msg(ts_sim_run(fam, cfg, p, &ro, NULL, res, &e) == TS_OK, "%s", e.msg);
    ck_assert_uint_eq(ts_trace_dropped(t), 0);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    *clock_hz = info.clock_hz;
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}

/* The default workload on ipu_mk1 (1216 tiles, 4 supersteps with exchanges), traced. */
START_TEST(test_bsp_run)
{
    ts_results res;
    double clock_hz;
    traced_default_run(0, &res, &clock_hz);
    uint64_t nss = ts_stats_find(res.stats, "supersteps.count")->u;
    uint64_t ss_cycles = ts_stats_find(res.stats, "supersteps.compute_cycles")->u +
                         ts_stats_find(res.stats, "supersteps.exchange_cycles")->u +
                         ts_stats_find(res.stats, "supersteps.sync_cycles")->u;
    ck_assert_uint_ge(nss, 2);

    json_t *root = load();
    json_t *ev = json_object_get(root, "traceEvents");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "otherData"), "dropped_events")), 0);
    const double cyc_us = 1e6 / clock_hz;
    enum { NT = 1216, MAXSS = 16 };
    static uint64_t tile_sum[NT + 1][MAXSS], last_end[NT + 1];
    static bool named[NT + 1];
    uint64_t ss_dur[MAXSS] = {0}, ss_seen = 0, total = 0, counters = 0, exchanges = 0;
    memset(tile_sum, 0, sizeof tile_sum);
    memset(last_end, 0, sizeof last_end);
    memset(named, 0, sizeof named);
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *ph = sget(x, "ph"), *name = sget(x, "name");
        long long tid = json_integer_value(json_object_get(x, "tid"));
        if (!strcmp(ph, "M")) {
            if (!strcmp(name, "thread_name") && tid >= 1 && tid <= NT) {
                char want[32];
                snprintf(want, sizeof want, "tile %lld", tid - 1);
                ck_assert_str_eq(sget(json_object_get(x, "args"), "name"), want);
                named[tid] = true;
            }
            continue;
        }
        if (!strcmp(ph, "C")) {
            counters++;
            continue;
        }
        ck_assert_str_eq(ph, "X");
        uint64_t ts = (uint64_t)(nget(x, "ts") / cyc_us + 0.5), dur = (uint64_t)(nget(x, "dur") / cyc_us + 0.5);
        long long id = json_integer_value(json_object_get(json_object_get(x, "args"), "superstep"));
        if (tid == 0) { /* the chip's row */
            if (!strcmp(name, "superstep")) {
                json_t *a = json_object_get(x, "args");
                ck_assert_int_eq(id, (long long)ss_seen);
                ck_assert_uint_eq(nget(a, "compute") + nget(a, "exchange") + nget(a, "sync"), dur);
                ck_assert_int_lt(id, MAXSS);
                ss_dur[id] = dur;
                ss_seen++;
                total += dur;
            }
            continue;
        }
        /* a tile's row: compute, exchange and sync wait slices, in order, never overlapping */
        ck_assert_msg(!strcmp(name, "compute") || !strcmp(name, "exchange") || !strcmp(name, "sync wait"), "%s", name);
        ck_assert_int_ge(tid, 1);
        ck_assert_int_le(tid, NT);
        ck_assert_int_ge(id, 0);
        ck_assert_int_lt(id, MAXSS);
        ck_assert_uint_gt(dur, 0);
        ck_assert_msg(ts >= last_end[tid], "tile %lld: a slice at %llu starts before the last ends (%llu)", tid - 1,
                      (unsigned long long)ts, (unsigned long long)last_end[tid]);
        last_end[tid] = ts + dur;
        tile_sum[tid][id] += dur;
        exchanges += !strcmp(name, "exchange");
    }
    /* one track per tile; every superstep of the report, each tile's slices filling it exactly */
    for (int i = 1; i <= NT; i++)
        ck_assert_msg(named[i], "no track for tile %d", i - 1);
    ck_assert_uint_eq(ss_seen, nss);
    ck_assert_uint_eq(total, ss_cycles);
    ck_assert_uint_le(total, res.cycles);
    for (int i = 1; i <= NT; i++)
        for (uint64_t k = 0; k < nss; k++)
            ck_assert_msg(tile_sum[i][k] == ss_dur[k], "tile %d superstep %llu: slices add to %llu, not %llu", i - 1,
                          (unsigned long long)k, (unsigned long long)tile_sum[i][k], (unsigned long long)ss_dur[k]);
    ck_assert_uint_gt(exchanges, NT);      /* tiles exchange in the later supersteps */
    ck_assert_uint_eq(counters, nss);      /* the bandwidth counter, once per superstep */
    json_decref(root);
    ts_results_free(&res);
}
END_TEST

/* The same run under a 1 MB limit: a row per tile would not fit half of it (1216 tiles x 5
 * supersteps x 448 bytes), so the tiles are traced by column (19 tiles, 64 tracks). Each
 * column's slices are ordered, never overlap and fill every superstep of the report exactly;
 * nothing is dropped. */
START_TEST(test_bsp_grouped)
{
    ts_results res;
    double clock_hz;
    traced_default_run(1000000, &res, &clock_hz);
    uint64_t nss = ts_stats_find(res.stats, "supersteps.count")->u;

    json_t *root = load();
    json_t *ev = json_object_get(root, "traceEvents");
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(root, "otherData"), "dropped_events")), 0);
    const double cyc_us = 1e6 / clock_hz;
    enum { NG = 64, MAXSS = 16 };
    uint64_t grp_sum[NG + 1][MAXSS], last_end[NG + 1], ss_dur[MAXSS] = {0}, ss_seen = 0, exchanges = 0;
    uint64_t members[MAXSS] = {0};
    int nnamed = 0;
    memset(grp_sum, 0, sizeof grp_sum);
    memset(last_end, 0, sizeof last_end);
    for (size_t i = 0; i < json_array_size(ev); i++) {
        json_t *x = json_array_get(ev, i);
        const char *ph = sget(x, "ph"), *name = sget(x, "name");
        long long tid = json_integer_value(json_object_get(x, "tid"));
        if (!strcmp(ph, "M")) {
            if (!strcmp(name, "thread_name") && tid >= 1) {
                char want[64];
                snprintf(want, sizeof want, "tiles %lld-%lld", (tid - 1) * 19, (tid - 1) * 19 + 18);
                ck_assert_int_le(tid, NG);
                ck_assert_str_eq(sget(json_object_get(x, "args"), "name"), want);
                nnamed++;
            }
            continue;
        }
        if (strcmp(ph, "X"))
            continue;
        uint64_t ts = (uint64_t)(nget(x, "ts") / cyc_us + 0.5), dur = (uint64_t)(nget(x, "dur") / cyc_us + 0.5);
        json_t *a = json_object_get(x, "args");
        long long id = json_integer_value(json_object_get(a, "superstep"));
        ck_assert_int_ge(id, 0);
        ck_assert_int_lt(id, MAXSS);
        if (tid == 0) {
            if (!strcmp(name, "superstep")) {
                ck_assert_int_eq(id, (long long)ss_seen);
                ss_dur[id] = dur;
                ss_seen++;
            }
            continue;
        }
        ck_assert_msg(!strcmp(name, "compute") || !strcmp(name, "exchange") || !strcmp(name, "sync wait"), "%s", name);
        ck_assert_int_ge(tid, 1);
        ck_assert_int_le(tid, NG);
        ck_assert_uint_gt(dur, 0);
        long long n = json_integer_value(json_object_get(a, "tiles"));
        ck_assert_int_ge(n, 1);
        ck_assert_int_le(n, 19);
        ck_assert_msg(ts >= last_end[tid], "group %lld: a slice at %llu starts before the last ends (%llu)", tid - 1,
                      (unsigned long long)ts, (unsigned long long)last_end[tid]);
        last_end[tid] = ts + dur;
        grp_sum[tid][id] += dur;
        exchanges += !strcmp(name, "exchange");
        if (!strcmp(name, "sync wait"))
            members[id] += (uint64_t)n;
    }
    ck_assert_int_eq(nnamed, NG);
    ck_assert_uint_eq(ss_seen, nss);
    for (int g = 1; g <= NG; g++)
        for (uint64_t k = 0; k < nss; k++)
            ck_assert_msg(grp_sum[g][k] == ss_dur[k], "group %d superstep %llu: slices add to %llu, not %llu", g - 1,
                          (unsigned long long)k, (unsigned long long)grp_sum[g][k], (unsigned long long)ss_dur[k]);
    for (uint64_t k = 0; k < nss; k++) /* every tile takes part in every superstep of this program */
        ck_assert_uint_eq(members[k], 1216);
    ck_assert_uint_gt(exchanges, NG);
    json_decref(root);
    ts_results_free(&res);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("trace");
    TCase *tc = tcase_create("trace");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, test_events);
    tcase_add_test(tc, test_layers);
    tcase_add_test(tc, test_rounding);
    tcase_add_test(tc, test_size_bound);
    tcase_add_test(tc, test_errors_and_abort);
    tcase_add_test(tc, test_empty);
    tcase_add_test(tc, test_bsp_run);
    tcase_add_test(tc, test_bsp_grouped);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
