/* tests/test_sweep.c — sweep specs (core/sweep.h): axes, ranges, series, cartesian and zip
 * expansion, filters, metrics from JSON reports, CSV fields, errors with line and column, and
 * allocation failures. A fake family, "sweepchip", stands for a real one.
 */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/limit.h"
#include "core/sweep.h"

typedef struct chip_cfg {
    int64_t tiles;
    uint64_t sram;
    double clock;
    int mode;
    bool ecc;
} chip_cfg;

static const char *const modes[] = {"fast", "exact", NULL};

static const ts_cfg_key chip_keys[] = {
    {"tiles", TS_CFG_INT, TS_UNIT_NONE, 1, 65536, "4", "tiles", offsetof(chip_cfg, tiles), NULL},
    {"tile.sram", TS_CFG_UINT, TS_UNIT_BYTES, 1024, 16777216, "64 KiB", "SRAM per tile", offsetof(chip_cfg, sram),
     NULL},
    {"clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1e6, 1e10, "1 GHz", "clock", offsetof(chip_cfg, clock), NULL},
    {"mode", TS_CFG_ENUM, TS_UNIT_NONE, 0, -1, "fast", "mode", offsetof(chip_cfg, mode), modes},
    {"ecc", TS_CFG_BOOL, TS_UNIT_NONE, 0, -1, "false", "ecc", offsetof(chip_cfg, ecc), NULL},
};

static const ts_schema chip_schema = {"sweepchip", "a chip for sweep tests", chip_keys,
                                      sizeof chip_keys / sizeof chip_keys[0], sizeof(chip_cfg), NULL};

static const ts_schema *lookup(const char *arch)
{
    return strcmp(arch, "sweepchip") ? NULL : &chip_schema;
}

static int builtin(const char *name, const char **text, size_t *len)
{
    static const char chip[] = "arch: sweepchip\n";
    if (strcmp(name, "chip"))
        return -1;
    *text = chip;
    *len = sizeof chip - 1;
    return 0;
}

static ts_config_opts copts(void)
{
    ts_config_opts o = {.schema = lookup, .builtin = builtin};
    return o;
}

static ts_status load(ts_sweep **s, const char *text, ts_err *err)
{
    ts_config_opts o = copts();
    ts_err_init(err);
    return ts_sweep_load_string(s, "spec.yaml", "", text, strlen(text), &o, err);
}

/* The error message of a spec that must not load: "spec.yaml:L:C: msg". */
static const char *load_error(const char *text)
{
    static char line[1200];
    ts_sweep *s = NULL;
    ts_err err;
    ts_status st = load(&s, text, &err);
    ck_assert_int_eq(st, TS_EINPUT);
    ck_assert_ptr_null(s);
    ts_err_format(&err, line, sizeof line);
    ts_err_free(&err);
    return line;
}

START_TEST(test_cartesian_ranges)
{
    ts_sweep *s;
    ts_err err;
    ck_assert_int_eq(load(&s,
                          "config: chip\n"
                          "workloads: [a.s, b.s]\n"
                          "axes:\n"
                          "  tiles: [4, 8]\n"
                          "  tile.sram: {from: 64 KiB, to: 256 KiB, factor: 2}\n"
                          "  clock: {from: 1 GHz, to: 1.3 GHz, step: 0.1 GHz}\n"
                          "metrics: cycles\n",
                          &err),
                     TS_OK);
    ck_assert_str_eq(ts_sweep_config(s), "chip");
    ck_assert_uint_eq(ts_sweep_naxes(s), 3);
    ck_assert_uint_eq(ts_sweep_ntotal(s), 2 * 2 * 3 * 4);
    ck_assert_uint_eq(ts_sweep_npoints(s), 48);
    /* Workloads outermost, last axis fastest. */
    ck_assert_uint_eq(ts_sweep_point_workload(s, 0), 0);
    ck_assert_uint_eq(ts_sweep_point_workload(s, 24), 1);
    ck_assert_str_eq(ts_sweep_point_value(s, 0, 0), "4");
    ck_assert_str_eq(ts_sweep_point_value(s, 0, 1), "65536");
    ck_assert_str_eq(ts_sweep_point_value(s, 0, 2), "1000000000");
    ck_assert_str_eq(ts_sweep_point_value(s, 1, 2), "1100000000");
    ck_assert_str_eq(ts_sweep_point_value(s, 3, 2), "1300000000"); /* 0.1 steps reach 'to' exactly */
    ck_assert_str_eq(ts_sweep_point_value(s, 4, 1), "131072");
    ck_assert_str_eq(ts_sweep_point_value(s, 11, 1), "262144");
    ck_assert_str_eq(ts_sweep_point_value(s, 12, 0), "8");
    ts_buf b = TS_BUF_INIT;
    size_t off[3];
    ts_sweep_point_sets(s, 13, &b, off);
    ck_assert_str_eq(b.data + off[0], "tiles=8");
    ck_assert_str_eq(b.data + off[1], "tile.sram=65536");
    ck_assert_str_eq(b.data + off[2], "clock=1100000000");
    ts_buf_reset(&b);
    ts_sweep_csv_header(s, &b);
    ck_assert_str_eq(ts_buf_str(&b), "point,workload,tiles,tile.sram,clock,cycles,error\n");
    ts_buf_reset(&b);
    ts_sweep_csv_row(s, 25, "{\"cycles\": 42}", NULL, &b);
    ck_assert_str_eq(ts_buf_str(&b), "25,b.s,4,65536,1100000000,42,\n");
    ts_buf_reset(&b);
    ts_sweep_csv_row(s, 25, NULL, "bad, \"very\"", &b);
    ck_assert_str_eq(ts_buf_str(&b), "25,b.s,4,65536,1100000000,,\"bad, \"\"very\"\"\"\n");
    ts_buf_reset(&b);
    ts_sweep_csv_row(s, 2, "{\"time_s\": 1}", NULL, &b);
    ck_assert_str_eq(ts_buf_str(&b), "2,a.s,4,65536,1200000000,,metric 'cycles' is not a value in the report\n");
    ts_buf_free(&b);
    ck_assert_int_eq(ts_sweep_find(s, 47), 47);
    ck_assert_int_eq(ts_sweep_find(s, 48), -1);
    ts_sweep_destroy(s);
    ts_err_free(&err);
}
END_TEST

START_TEST(test_zip_filters)
{
    ts_sweep *s;
    ts_err err;
    ck_assert_int_eq(load(&s,
                          "config: chip\n"
                          "workloads: w\n"
                          "combine: zip\n"
                          "axes:\n"
                          "  tiles: {from: 2, to: 8, step: 2}\n"
                          "  mode: [fast, exact, FAST, exact]\n"
                          "  ecc: [on, off, false, no]\n"
                          "filter:\n"
                          "  - tiles * 16 KiB < 0.125 MiB\n"
                          "  - \"mode == 'exact' || !ecc\"\n",
                          &err),
                     TS_OK);
    ck_assert_uint_eq(ts_sweep_ntotal(s), 4);
    /* Point 0: ecc and fast (dropped by the second filter); 3: 8 tiles x 16 KiB is not < 128 KiB. */
    ck_assert_uint_eq(ts_sweep_npoints(s), 2);
    ck_assert_uint_eq(ts_sweep_point_id(s, 0), 1);
    ck_assert_uint_eq(ts_sweep_point_id(s, 1), 2);
    ck_assert_str_eq(ts_sweep_point_value(s, 1, 1), "fast");
    ck_assert_str_eq(ts_sweep_point_value(s, 1, 2), "false");
    ck_assert_int_eq(ts_sweep_find(s, 0), -1);
    ck_assert_int_eq(ts_sweep_find(s, 2), 1);
    /* Default metrics. */
    ck_assert_uint_eq(ts_sweep_nmetrics(s), 4);
    ck_assert_str_eq(ts_sweep_metric(s, 2), "energy.total_j");
    ts_sweep_destroy(s);
    ts_err_free(&err);
}
END_TEST

START_TEST(test_errors)
{
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\nmetric: [cycles]\n"),
                     "spec.yaml:3:1: unknown key 'metric' (did you mean 'metrics'?)");
    ck_assert_str_eq(load_error("config: chip\n"),
                     "spec.yaml:1:1: missing required key 'workloads'");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n  tile.sarm: [1 KiB]\n"),
                     "spec.yaml:4:3: unknown key 'tile.sarm' for arch sweepchip (did you mean 'tile.sram'?)");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n  tiles: [4, 0]\n"),
                     "spec.yaml:4:14: tiles: 0 is out of range [1, 65536]");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n  mode: {from: 1, to: 2, step: 1}\n"),
                     "spec.yaml:4:9: mode: a range needs a numeric key; list the values instead");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n  tiles: {from: 4, to: 2, step: 1}\n"),
                     "spec.yaml:4:24: tiles: 'to' is below 'from'");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n  tiles: [1, 2]\n  clock: [1 GHz]\n"
                                "combine: zip\n"),
                     "spec.yaml:1:1: combine: zip needs axes of one length, but 'tiles' has 2 values and "
                     "'clock' 1");
    /* A range's values are counted before any is made: four million are refused at once, and so
     * are 763 million (found by fuzz_sweep: it took the instrumented build 27 s to make the first
     * million before the limit stopped it). */
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n"
                                "  clock: {from: 1 GHz, to: 2 GHz, step: 250 Hz}\n"),
                     "spec.yaml:4:10: clock: 4000001 values, more than the limit of 1000000 (raise it with "
                     "TESSERA_LIMITS=sweep_points=N)");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n"
                                "  clock: {from: 2 GHz, to: 6 GHz, step: 5.24 Hz}\n"),
                     "spec.yaml:4:10: clock: 763358780 values, more than the limit of 1000000 (raise it with "
                     "TESSERA_LIMITS=sweep_points=N)");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n"
                                "  clock: {from: 1 MHz, to: 10 GHz, factor: 1.000001}\n"),
                     "spec.yaml:4:10: clock: 9210345 values, more than the limit of 1000000 (raise it with "
                     "TESSERA_LIMITS=sweep_points=N)");
    ts_limit_set(TS_LIMIT_SWEEP_POINTS, 3);
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes:\n  tiles: [1, 2]\n  clock: [1 GHz, 2 GHz]\n"),
                     "spec.yaml:1:1: the sweep has more than 3 points (raise it with TESSERA_LIMITS=sweep_points=N)");
    ts_limits_reset();
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes: {tiles: [1]}\nfilter: tiles <= 2 +\n"),
                     "spec.yaml:4:21: filter: expression ends too early");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes: {tiles: [1]}\nfilter: tils < 3\n"),
                     "spec.yaml:4:9: filter: unknown axis 'tils' (did you mean 'tiles'?)");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes: {mode: [fast]}\nfilter: mode < 3\n"),
                     "spec.yaml:4:9: filter: cannot compare text with a number");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\naxes: {tiles: [1]}\nfilter: \"tiles < 3 GHzz\"\n"),
                     "spec.yaml:4:18: filter: '3 GHzz' is not a number or a quantity");
    ck_assert_str_eq(load_error("config: chip\nworkloads: [a]\nmetrics: [energy.total_j, stat.x]\n"),
                     "spec.yaml:3:27: metrics: unknown report field 'stat' (did you mean 'stats'?)");
    /* The config loader words its own part of the message. */
    const char *m = load_error("config: nochip\nworkloads: [a]\n");
    const char *want = "spec.yaml:1:9: config 'nochip' does not load: ";
    ck_assert_msg(!strncmp(m, want, strlen(want)), "got '%s'", m);
}
END_TEST

/* Parentheses, '-' and '!' nest at most 64 deep in a filter; deeper ones are refused at the
 * first level too many instead of exhausting the stack. */
START_TEST(test_filter_depth)
{
    enum { DEEP = 100000 };
    char *text = malloc(2 * DEEP + 100);
    ck_assert_ptr_nonnull(text);
    const char *head = "config: chip\nworkloads: [a]\naxes: {tiles: [1, 2]}\nfilter: ";
    for (int levels = 64; levels <= 65; levels++) {
        size_t n = strlen(head);
        memcpy(text, head, n);
        memset(text + n, '(', (size_t)levels);
        n += (size_t)levels;
        n += (size_t)sprintf(text + n, "tiles");
        memset(text + n, ')', (size_t)levels);
        sprintf(text + n + (size_t)levels, " < 2\n");
        if (levels == 64) {
            ts_sweep *s;
            ts_err err;
            ck_assert_int_eq(load(&s, text, &err), TS_OK);
            ck_assert_uint_eq(ts_sweep_npoints(s), 1);
            ts_sweep_destroy(s);
            ts_err_free(&err);
        } else {
            ck_assert_str_eq(load_error(text), "spec.yaml:4:73: filter: expression nested more than 64 levels");
        }
    }
    int n = sprintf(text, "%s\"", head);
    for (int i = 0; i < 65; i++)
        n += sprintf(text + n, "- ");
    sprintf(text + n, "tiles < 2\"\n");
    ck_assert_str_eq(load_error(text), "spec.yaml:4:138: filter: expression nested more than 64 levels");
    n = sprintf(text, "%s\"", head);
    for (int i = 0; i < 65; i++)
        n += sprintf(text + n, "!");
    sprintf(text + n, "(tiles < 2)\"\n");
    ck_assert_str_eq(load_error(text), "spec.yaml:4:74: filter: expression nested more than 64 levels");
    n = sprintf(text, "%s", head);
    memset(text + n, '(', DEEP);
    sprintf(text + n + DEEP, "tiles < 2\n");
    ck_assert_str_eq(load_error(text), "spec.yaml:4:73: filter: expression nested more than 64 levels");
    free(text);
}
END_TEST

START_TEST(test_json_lookup)
{
    const char *j = "{\"cycles\": 12, \"energy\": {\"total_j\": 1.5e-3, \"table\": null},"
                    " \"name\": \"a\\\"b\", \"stats\": {\"a\": {\"value\": 1}, \"a.b\": {\"kind\": \"u64\", \"value\": 7},"
                    " \"arr\": {\"values\": [1, 2]}}}";
    size_t n = strlen(j);
    ts_buf b = TS_BUF_INIT;
    ck_assert_int_eq(ts_json_lookup(j, n, "cycles", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "12");
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_json_lookup(j, n, "energy.total_j", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "0.0015"); /* a real as the reports write it */
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_json_lookup(j, n, "energy.table", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "");
    ck_assert_int_eq(ts_json_lookup(j, n, "name", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "a\"b");
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_json_lookup(j, n, "stats.a.b", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "7");
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_json_lookup(j, n, "stats.a", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "1");
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_json_lookup(j, n, "stats.arr", &b), -1);
    ck_assert_int_eq(ts_json_lookup(j, n, "energy", &b), -1);
    ck_assert_int_eq(ts_json_lookup(j, n, "nope", &b), -1);
    ck_assert_int_eq(ts_json_lookup("{\"a\": [1,", 9, "b", &b), -1);
    ck_assert_int_eq(ts_json_lookup("", 0, "a", &b), -1);
    /* \u escapes, a surrogate pair included, come back as UTF-8 */
    const char *u = "{\"w\": \"caf\\u00e9 \\ud83d\\ude00\"}";
    ts_buf_reset(&b);
    ck_assert_int_eq(ts_json_lookup(u, strlen(u), "w", &b), 0);
    ck_assert_str_eq(ts_buf_str(&b), "caf\xc3\xa9 \xf0\x9f\x98\x80");
    ts_buf_reset(&b);
    ts_json_compact("{ \"a b\" : [1, 2],\n \"c\": \"x \\\" y\" }", 34, &b);
    ck_assert_str_eq(ts_buf_str(&b), "{\"a b\":[1,2],\"c\":\"x \\\" y\"}");
    ts_buf_free(&b);
}
END_TEST

START_TEST(test_csv)
{
    ts_buf b = TS_BUF_INIT, f = TS_BUF_INIT;
    ts_csv_field(&b, "plain");
    ts_buf_putc(&b, ',');
    ts_csv_field(&b, "a,b");
    ts_buf_putc(&b, ',');
    ts_csv_field(&b, "say \"hi\"\nbye");
    ts_buf_putc(&b, ',');
    ck_assert_str_eq(ts_buf_str(&b), "plain,\"a,b\",\"say \"\"hi\"\"\nbye\",");
    ck_assert_int_eq(ts_csv_split(b.data, b.len, &f), 4);
    const char *p = f.data;
    ck_assert_str_eq(p, "plain");
    p += strlen(p) + 1;
    ck_assert_str_eq(p, "a,b");
    p += strlen(p) + 1;
    ck_assert_str_eq(p, "say \"hi\"\nbye");
    p += strlen(p) + 1;
    ck_assert_str_eq(p, "");
    ck_assert_int_eq(ts_csv_split("a\"b", 3, &f), -1);
    ck_assert_int_eq(ts_csv_split("\"ab", 3, &f), -1);
    ts_buf_free(&b);
    ts_buf_free(&f);
}
END_TEST

START_TEST(test_alloc_failures)
{
    const char *spec = "config: chip\nworkloads: [a, b]\naxes:\n  tiles: [1, 2]\n"
                       "  clock: {from: 1 GHz, to: 2 GHz, step: 0.5 GHz}\nfilter: tiles < 2\nmetrics: [cycles]\n";
    for (long n = 1; n < 400; n++) {
        ts_sweep *s = NULL;
        ts_err err;
        ts_alloc_fail_after(n);
        ts_status st = load(&s, spec, &err);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (st == TS_OK) {
            ck_assert_uint_eq(ts_sweep_npoints(s), 6);
            ts_sweep_destroy(s);
            ts_err_free(&err);
            if (!failed)
                return;
            continue;
        }
        ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d: %s", n, (int)st, err.msg);
        ck_assert_ptr_null(s);
        ts_err_free(&err);
    }
    ck_abort_msg("the spec never loaded");
}
END_TEST

int main(void)
{
    Suite *su = suite_create("sweep");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, test_cartesian_ranges);
    tcase_add_test(tc, test_zip_filters);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_filter_depth);
    tcase_add_test(tc, test_json_lookup);
    tcase_add_test(tc, test_csv);
    tcase_add_test(tc, test_alloc_failures);
    suite_add_tcase(su, tc);
    SRunner *sr = srunner_create(su);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
