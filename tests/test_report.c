/* tests/test_report.c — text, JSON and CSV reports from hand-built results.
 *
 * The text, JSON and CSV renderings of one fixed run are compared byte for byte with files in
 * tests/golden/; run with TS_UPDATE_GOLDEN=1 to rewrite them after a deliberate change (and
 * review the diff). JSON is also parsed back with jansson and every documented field checked.
 */
#include <check.h>
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/report.h"

/* A small table so the golden files do not move when the shipped tables are revised. */
static const char table_yaml[] =
    "name: golden\n"
    "node: 45 nm\n"
    "entries:\n"
    "  fp16_mac: {value: 2 pJ, bits: 16, component: compute, source: test}\n"
    "  sram_read_64b: {value: 10 pJ, bits: 64, component: sram, source: test}\n"
    "  wire_bit_mm: {value: 0.12 pJ, bits: 1, component: network, source: test}\n"
    "  insn_issue: {value: 11 pJ, component: control, source: test}\n"
    "  dram_64b: {value: 1.3 nJ, bits: 64, component: offchip, source: test}\n";

#define CYCLES 1234567ULL
#define CLOCK 1.33e9
#define TILES 1216ULL

/* The fixed run: an IPU-like chip with every kind of statistic. */
static void build(ts_results *r)
{
    ts_err e;
    ts_err_init(&e);
    ts_results_init(r);
    snprintf(r->arch, sizeof r->arch, "ipu");
    snprintf(r->config, sizeof r->config, "ipu_mk1");
    snprintf(r->workload, sizeof r->workload, "gemm_2048");
    snprintf(r->net_name, sizeof r->net_name, "exchange");
    r->cycles = CYCLES;
    r->clock_hz = CLOCK;
    r->bytes[TS_LEVEL_SRAM] = 987654321;
    r->bytes[TS_LEVEL_NET] = 123456789;
    r->bytes[TS_LEVEL_OFFCHIP] = 4096;
    r->macs = 8589934592ULL;
    r->macs_executed = 9663676416ULL; /* an eighth more: a padded schedule */
    r->flops = 2.0 * 8589934592.0;
    r->ops = r->flops + 123456789.0; /* and integer work: address arithmetic */
    r->static_w = 12.5;
    /* MK1's peaks (docs/ipu.md): 64 f16 MACs per tile per cycle, 16 f32 */
    snprintf(r->peak[0].dtype, sizeof r->peak[0].dtype, "f16");
    r->peak[0].macs_per_cycle = 64.0 * TILES;
    snprintf(r->peak[1].dtype, sizeof r->peak[1].dtype, "f32");
    r->peak[1].macs_per_cycle = 16.0 * TILES;
    r->npeak = 2;
    ck_assert_int_eq(ts_results_util(r, "tile", TILES, 1000000000ULL, &e), TS_OK);
    ck_assert_int_eq(ts_results_util(r, "amp", TILES, 777777777ULL, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(r, "sram_read_64b", 1.5e8, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(r, "fp16_mac", 8589934592.0, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(r, "wire_bit_mm", 2.5e9, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(r, "insn_issue", 3e6, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(r, "dram_64b", 512, &e), TS_OK);
    ts_stats *s = r->stats;
    ck_assert_int_eq(ts_stats_u64(s, "exchange.bytes", "B", "bytes sent over the exchange", 123456789), TS_OK);
    ck_assert_int_eq(ts_stats_f64(s, "ipc", "", "instructions per cycle per tile", 0.8125), TS_OK);
    ck_assert_int_eq(ts_stats_u64(s, "supersteps", "", "BSP supersteps", 45), TS_OK);
    double busy[8] = {100, 250, 250, 75.5, 900, 10, 0, 300};
    ck_assert_int_eq(ts_stats_array(s, "tile.busy", "cycles", "busy cycles per tile", busy, 8), TS_OK);
    uint64_t hist[5] = {40, 12, 0, 3, 1};
    ck_assert_int_eq(ts_stats_hist(s, "msg.size", "B", "exchange message sizes", hist, 5, 0, 64), TS_OK);
    const char *cols[] = {"superstep", "compute", "sync", "exchange"};
    const char *units[] = {"", "cycles", "cycles", "cycles"};
    int t = ts_stats_table(s, "bsp", "one row per superstep", 4, cols, units);
    ck_assert_int_ge(t, 0);
    for (int i = 0; i < 45; i++) {
        double row[4] = {i, 20000.0 + 37 * i, 150, 4096.0 + (i % 7) * 1000.5};
        ck_assert_int_eq(ts_stats_row(s, t, row), TS_OK);
    }
    ts_energy_table *tab;
    ck_assert_int_eq(ts_energy_load_string(&tab, "golden", table_yaml, strlen(table_yaml), &e), TS_OK);
    ck_assert_int_eq(ts_results_price(r, tab, &e), TS_OK);
    ts_energy_destroy(tab);
    ts_err_free(&e);
}

static char *golden_path(const char *name)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    ck_assert_msg(root != NULL, "TS_SOURCE_ROOT is not set");
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/%s", root, name);
    return path;
}

/* Compare with the golden file byte for byte, or rewrite it when TS_UPDATE_GOLDEN=1. */
static void golden(const char *name, const ts_buf *b)
{
    const char *path = golden_path(name);
    ts_err e;
    ts_err_init(&e);
    const char *upd = getenv("TS_UPDATE_GOLDEN");
    if (upd && !strcmp(upd, "1")) {
        ck_assert_int_eq(ts_write_file_atomic(path, ts_buf_str(b), b->len, &e), TS_OK);
        return;
    }
    char *data;
    size_t len;
    ck_assert_msg(ts_read_file(path, &data, &len, &e) == TS_OK, "%s: %s (set TS_UPDATE_GOLDEN=1 to create it)",
                  path, e.msg);
    if (len != b->len || memcmp(data, ts_buf_str(b), len) != 0) {
        size_t i = 0;
        while (i < len && i < b->len && data[i] == b->data[i])
            i++;
        ck_abort_msg("%s differs from the golden file at byte %zu; got:\n%s", name, i, ts_buf_str(b));
    }
    ts_free(data);
    ts_err_free(&e);
}

START_TEST(test_format_parse)
{
    ck_assert_int_eq(ts_format_parse("text"), TS_FMT_TEXT);
    ck_assert_int_eq(ts_format_parse("json"), TS_FMT_JSON);
    ck_assert_int_eq(ts_format_parse("csv"), TS_FMT_CSV);
    ck_assert_int_eq(ts_format_parse("xml"), -1);
    ck_assert_int_eq(ts_format_parse("JSON"), -1);
    ck_assert_int_eq(ts_format_parse(""), -1);
    ck_assert_int_eq(ts_format_parse(NULL), -1);
}
END_TEST

START_TEST(test_text_golden)
{
    ts_results r;
    build(&r);
    ts_buf b = TS_BUF_INIT;
    ts_report_text(&r, &b);
    ck_assert(!b.oom);
    golden("report_ipu.txt", &b);
    /* Checks that do not depend on the golden file. */
    const char *s = ts_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(s, "1,234,567"));
    ck_assert_ptr_nonnull(strstr(s, "network (exchange)"));
    ck_assert_ptr_nonnull(strstr(s, "… 5 more rows"));
    ck_assert_ptr_null(strstr(s, " \n")); /* no trailing spaces */
    ts_buf_free(&b);
    ts_results_free(&r);
}
END_TEST

static json_t *get(json_t *o, const char *k, json_type type)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(v != NULL, "missing key %s", k);
    ck_assert_msg(json_typeof(v) == type, "key %s has type %d, want %d", k, (int)json_typeof(v), (int)type);
    return v;
}

/* a and b both found, a first. */
static void before(const char *a, const char *b)
{
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    ck_assert_msg(a < b, "keys out of order");
}

static void num_eq(json_t *o, const char *k, double want)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(v && json_is_number(v), "key %s is not a number", k);
    double got = json_number_value(v);
    ck_assert_msg(got == want || fabs(got - want) <= 1e-12 * fabs(want), "%s: got %.17g, want %.17g", k, got,
                  want);
}

static void int_eq(json_t *o, const char *k, long long want)
{
    json_t *v = get(o, k, JSON_INTEGER);
    ck_assert_int_eq(json_integer_value(v), want);
}

START_TEST(test_json)
{
    ts_results r;
    build(&r);
    ts_buf b = TS_BUF_INIT;
    ts_report_json(&r, &b);
    golden("report_ipu.json", &b);
    json_error_t je;
    json_t *root = json_loads(ts_buf_str(&b), 0, &je);
    ck_assert_msg(root != NULL, "invalid json at %d:%d: %s", je.line, je.column, je.text);
    double t_s = (double)CYCLES / CLOCK;
    int_eq(root, "schema_version", TS_REPORT_SCHEMA_VERSION);
    ck_assert_str_eq(json_string_value(get(root, "arch", JSON_STRING)), "ipu");
    ck_assert_str_eq(json_string_value(get(root, "config", JSON_STRING)), "ipu_mk1");
    ck_assert_str_eq(json_string_value(get(root, "workload", JSON_STRING)), "gemm_2048");
    ck_assert_str_eq(json_string_value(get(root, "network_name", JSON_STRING)), "exchange");
    int_eq(root, "cycles", (long long)CYCLES);
    num_eq(root, "time_s", t_s);
    num_eq(root, "clock_hz", CLOCK);
    json_t *bytes = get(root, "bytes", JSON_OBJECT);
    int_eq(bytes, "sram", 987654321);
    int_eq(bytes, "network", 123456789);
    int_eq(bytes, "offchip", 4096);
    ck_assert_uint_eq(json_object_size(bytes), 3);
    json_t *bw = get(root, "bandwidth_bytes_per_s", JSON_OBJECT);
    num_eq(bw, "sram", 987654321 / t_s);
    num_eq(bw, "network", 123456789 / t_s);
    num_eq(bw, "offchip", 4096 / t_s);
    json_t *bpc = get(root, "bytes_per_cycle", JSON_OBJECT);
    num_eq(bpc, "sram", 987654321.0 / (double)CYCLES);
    num_eq(bpc, "network", 123456789.0 / (double)CYCLES);
    num_eq(bpc, "offchip", 4096.0 / (double)CYCLES);
    json_t *util = get(root, "utilization", JSON_OBJECT);
    ck_assert_uint_eq(json_object_size(util), 2);
    json_t *tile = get(util, "tile", JSON_OBJECT);
    int_eq(tile, "units", (long long)TILES);
    int_eq(tile, "busy_unit_cycles", 1000000000LL);
    num_eq(tile, "fraction", 1e9 / ((double)TILES * (double)CYCLES));
    num_eq(get(util, "amp", JSON_OBJECT), "fraction", 777777777.0 / ((double)TILES * (double)CYCLES));
    int_eq(root, "macs", 8589934592LL);
    num_eq(root, "flops", 2.0 * 8589934592.0);
    num_eq(root, "flops_per_s", 2.0 * 8589934592.0 / t_s);

    json_t *en = get(root, "energy", JSON_OBJECT);
    ck_assert_str_eq(json_string_value(get(en, "table", JSON_STRING)), "golden");
    double compute = 8589934592.0 * 2e-12, sram = 1.5e8 * 10e-12, net = 2.5e9 * 0.12e-12,
           control = 3e6 * 11e-12, off = 512 * 1.3e-9, stat = 12.5 * t_s;
    double total = compute + sram + net + control + off + stat;
    num_eq(en, "total_j", total);
    num_eq(en, "avg_power_w", total / t_s);
    num_eq(en, "static_w", 12.5);
    json_t *byc = get(en, "by_component", JSON_OBJECT);
    ck_assert_uint_eq(json_object_size(byc), 6);
    num_eq(byc, "compute", compute);
    num_eq(byc, "sram", sram);
    num_eq(byc, "network", net);
    num_eq(byc, "control", control);
    num_eq(byc, "offchip", off);
    num_eq(byc, "static", stat);
    json_t *ev = get(en, "events", JSON_OBJECT);
    ck_assert_uint_eq(json_object_size(ev), 5);
    num_eq(ev, "fp16_mac", 8589934592.0);
    num_eq(ev, "dram_64b", 512);
    /* Keys in a fixed order: components and events by name. */
    const char *s = ts_buf_str(&b);
    before(strstr(s, "\"compute\":"), strstr(s, "\"control\":"));
    before(strstr(s, "\"control\":"), strstr(s, "\"network\": 0.0003"));
    before(strstr(s, "\"dram_64b\":"), strstr(s, "\"fp16_mac\":"));
    before(strstr(s, "\"insn_issue\":"), strstr(s, "\"wire_bit_mm\":"));

    json_t *st = get(root, "stats", JSON_OBJECT);
    ck_assert_uint_eq(json_object_size(st), 6);
    json_t *x = get(st, "exchange.bytes", JSON_OBJECT);
    ck_assert_str_eq(json_string_value(get(x, "kind", JSON_STRING)), "u64");
    ck_assert_str_eq(json_string_value(get(x, "unit", JSON_STRING)), "B");
    ck_assert_str_eq(json_string_value(get(x, "desc", JSON_STRING)), "bytes sent over the exchange");
    int_eq(x, "value", 123456789);
    x = get(st, "ipc", JSON_OBJECT);
    ck_assert_str_eq(json_string_value(get(x, "kind", JSON_STRING)), "f64");
    num_eq(x, "value", 0.8125);
    x = get(st, "tile.busy", JSON_OBJECT);
    ck_assert_str_eq(json_string_value(get(x, "kind", JSON_STRING)), "array");
    json_t *vals = get(x, "values", JSON_ARRAY);
    ck_assert_uint_eq(json_array_size(vals), 8);
    ck_assert_double_eq(json_number_value(json_array_get(vals, 3)), 75.5);
    ck_assert_double_eq(json_number_value(json_array_get(vals, 4)), 900);
    x = get(st, "msg.size", JSON_OBJECT);
    ck_assert_str_eq(json_string_value(get(x, "kind", JSON_STRING)), "hist");
    json_t *h = get(x, "hist", JSON_OBJECT);
    num_eq(h, "lo", 0);
    num_eq(h, "width", 64);
    json_t *counts = get(h, "counts", JSON_ARRAY);
    ck_assert_uint_eq(json_array_size(counts), 5);
    ck_assert_int_eq(json_integer_value(json_array_get(counts, 0)), 40);
    ck_assert_int_eq(json_integer_value(json_array_get(counts, 4)), 1);
    x = get(st, "bsp", JSON_OBJECT);
    ck_assert_str_eq(json_string_value(get(x, "kind", JSON_STRING)), "table");
    json_t *tb = get(x, "table", JSON_OBJECT);
    json_t *cols = get(tb, "columns", JSON_ARRAY);
    ck_assert_uint_eq(json_array_size(cols), 4);
    ck_assert_str_eq(json_string_value(get(json_array_get(cols, 1), "name", JSON_STRING)), "compute");
    ck_assert_str_eq(json_string_value(get(json_array_get(cols, 1), "unit", JSON_STRING)), "cycles");
    json_t *rows = get(tb, "rows", JSON_ARRAY);
    ck_assert_uint_eq(json_array_size(rows), 45); /* JSON keeps every row */
    json_t *last = json_array_get(rows, 44);
    ck_assert_uint_eq(json_array_size(last), 4);
    ck_assert_double_eq(json_number_value(json_array_get(last, 1)), 20000.0 + 37 * 44);
    ck_assert_double_eq(json_number_value(json_array_get(last, 3)), 4096.0 + 2 * 1000.5);
    /* Statistics in insertion order. */
    before(strstr(s, "\"supersteps\":"), strstr(s, "\"tile.busy\":"));
    before(strstr(s, "\"msg.size\":"), strstr(s, "\"bsp\":"));
    json_decref(root);
    ts_buf_free(&b);
    ts_results_free(&r);
}
END_TEST

/* A run that did nothing: undefined ratios are null, an unpriced run has no energy. */
START_TEST(test_json_empty)
{
    ts_results r;
    ts_results_init(&r);
    ts_buf b = TS_BUF_INIT;
    ts_report_json(&r, &b);
    json_error_t je;
    json_t *root = json_loads(ts_buf_str(&b), 0, &je);
    ck_assert_msg(root != NULL, "invalid json: %s", je.text);
    int_eq(root, "cycles", 0);
    num_eq(root, "time_s", 0);
    get(get(root, "bandwidth_bytes_per_s", JSON_OBJECT), "sram", JSON_NULL);
    get(get(root, "bytes_per_cycle", JSON_OBJECT), "network", JSON_NULL);
    get(root, "flops_per_s", JSON_NULL);
    json_t *en = get(root, "energy", JSON_OBJECT);
    get(en, "table", JSON_NULL);
    get(en, "total_j", JSON_NULL);
    get(en, "avg_power_w", JSON_NULL);
    ck_assert_uint_eq(json_object_size(get(en, "by_component", JSON_OBJECT)), 0);
    ck_assert_uint_eq(json_object_size(get(root, "utilization", JSON_OBJECT)), 0);
    ck_assert_uint_eq(json_object_size(get(root, "stats", JSON_OBJECT)), 0);
    json_decref(root);
    /* The text report says the run is unpriced rather than print zero joules. */
    ts_buf_reset(&b);
    ts_report_text(&r, &b);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&b), "not priced: no energy table"));
    ts_buf_free(&b);
    ts_results_free(&r);
}
END_TEST

/* Split one CSV line per RFC 4180 into at most max fields (owned by the caller). */
static size_t csv_split(const char *s, char **out, size_t max)
{
    size_t n = 0;
    for (;;) {
        ts_buf f = TS_BUF_INIT;
        ts_buf_put(&f, "", 0);
        if (*s == '"') {
            s++;
            for (;;) {
                if (*s == '"' && s[1] == '"') {
                    ts_buf_putc(&f, '"');
                    s += 2;
                } else if (*s == '"') {
                    s++;
                    break;
                } else {
                    ck_assert_int_ne(*s, 0);
                    ts_buf_putc(&f, *s++);
                }
            }
        } else {
            while (*s && *s != ',' && *s != '\n')
                ts_buf_putc(&f, *s++);
        }
        ck_assert_uint_lt(n, max);
        out[n++] = f.data;
        if (*s != ',')
            break;
        s++;
    }
    ck_assert_msg(*s == '\n' && s[1] == 0, "line does not end after the last field");
    return n;
}

static const char csv_header[] = "arch,config,workload,cycles,time_s,clock_hz,sram_bytes,network_bytes,"
                                 "offchip_bytes,sram_bw,network_bw,offchip_bw,macs,flops,energy_j,avg_power_w,outputs\n";

/* Reports write reals with TS_JSON_DIGITS significant digits: equal to 1 part in 10^14. */
static bool near(double a, double b)
{
    return fabs(a - b) <= 1e-14 * fabs(b);
}

/* The index of column name in the header fields h[0..n), or -1. */
static long column(char **h, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(h[i], name))
            return (long)i;
    return -1;
}

/* The share of peak and the intensity from their definitions (core/results.h). */
START_TEST(test_peak_share)
{
    ts_results r;
    build(&r);
    ck_assert_double_eq(ts_results_peak_macs(&r), 64.0 * TILES);
    ck_assert(near(ts_results_mac_share(&r), 8589934592.0 / (64.0 * TILES * CYCLES)));
    ts_buf b = TS_BUF_INIT;
    ts_report_json(&r, &b);
    json_t *j = json_loads(ts_buf_str(&b), 0, NULL);
    ck_assert_ptr_nonnull(j);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "macs_executed")), 9663676416LL);
    ck_assert(near(json_number_value(json_object_get(json_object_get(j, "peak_macs_per_cycle"), "f32")), 16.0 * TILES));
    ck_assert(near(json_number_value(json_object_get(json_object_get(j, "arithmetic_intensity"), "sram")),
                   2 * 8589934592.0 / 987654321));
    json_decref(j);
    ts_buf_reset(&b);
    ts_report_text(&r, &b);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&b), "  MACs executed     9,663,676,416\n"));
    ts_buf_free(&b);
    r.npeak = 0; /* no peak known: no share */
    ck_assert(isnan(ts_results_mac_share(&r)));
    ts_results_free(&r);
}
END_TEST

START_TEST(test_csv)
{
    ts_buf b = TS_BUF_INIT;
    ts_results r;
    build(&r);
    ts_report_csv_header(&r, &b);
    ck_assert_msg(!strncmp(ts_buf_str(&b), csv_header, strlen(csv_header) - 1), "%s", ts_buf_str(&b));
    ts_report_csv_row(&r, &b);
    golden("report_ipu.csv", &b);
    ts_buf_reset(&b);

    /* After the 17 columns of schema 1, every other scalar of the JSON under its path, once: a
     * statistic by its value, arrays, histograms and tables left out. */
    ts_report_csv_header(&r, &b);
    char *h[128], *v[128];
    size_t nh = csv_split(ts_buf_str(&b), h, 128);
    ts_buf_reset(&b);
    ts_report_csv_row(&r, &b);
    size_t nv = csv_split(ts_buf_str(&b), v, 128);
    ck_assert_uint_eq(nh, nv);
    ck_assert_uint_gt(nh, 17);
    for (size_t i = 0; i < nh; i++)
        for (size_t k = i + 1; k < nh; k++)
            ck_assert_msg(strcmp(h[i], h[k]), "column %s twice", h[i]);
    static const struct { const char *col, *want; } cells[] = {
        {"schema_version", "1"}, {"network_name", "exchange"}, {"utilization.amp.units", "1216"},
        {"utilization.tile.busy_unit_cycles", "1000000000"}, {"energy.table", "golden"},
        {"energy.static_w", "12.5"}, {"energy.events.fp16_mac", "8589934592"},
        {"stats.exchange.bytes", "123456789"}, {"stats.ipc", "0.8125"}, {"stats.supersteps", "45"},
    };
    for (size_t i = 0; i < sizeof cells / sizeof *cells; i++) {
        long c = column(h, nh, cells[i].col);
        ck_assert_msg(c >= 17, "no column %s", cells[i].col);
        ck_assert_str_eq(v[c], cells[i].want);
    }
    ck_assert(near(strtod(v[column(h, nh, "bytes_per_cycle.sram")], NULL), 987654321.0 / CYCLES));
    ck_assert(near(strtod(v[column(h, nh, "utilization.tile.fraction")], NULL), 1e9 / (1216.0 * CYCLES)));
    static const char *const absent[] = {"bytes.sram", "energy.total_j", "stats.tile.busy", "stats.msg.size",
                                         "stats.bsp", "stats.ipc.unit", "outputs.0.name"};
    for (size_t i = 0; i < sizeof absent / sizeof *absent; i++)
        ck_assert_msg(column(h, nh, absent[i]) < 0, "column %s", absent[i]);
    for (size_t i = 0; i < nh; i++) {
        ts_free(h[i]);
        ts_free(v[i]);
    }
    ts_buf_reset(&b);

    /* Fields with commas, quotes and newlines are quoted, and read back the same. */
    snprintf(r.config, sizeof r.config, "mk1, \"fast\"");
    snprintf(r.workload, sizeof r.workload, "two\nlines");
    ts_report_csv_row(&r, &b);
    char *f[128];
    size_t n = csv_split(ts_buf_str(&b), f, 128);
    ck_assert_uint_eq(n, nh);
    ck_assert_str_eq(f[0], "ipu");
    ck_assert_str_eq(f[1], "mk1, \"fast\"");
    ck_assert_str_eq(f[2], "two\nlines");
    double t_s = (double)CYCLES / CLOCK;
    ck_assert_str_eq(f[3], "1234567");
    ck_assert_msg(near(strtod(f[4], NULL), t_s), "%s", f[4]);
    ck_assert_msg(near(strtod(f[5], NULL), CLOCK), "%s", f[5]);
    ck_assert_str_eq(f[6], "987654321");
    ck_assert_str_eq(f[7], "123456789");
    ck_assert_str_eq(f[8], "4096");
    ck_assert_msg(near(strtod(f[9], NULL), 987654321 / t_s), "%s", f[9]);
    ck_assert_msg(near(strtod(f[10], NULL), 123456789 / t_s), "%s", f[10]);
    ck_assert_msg(near(strtod(f[11], NULL), 4096 / t_s), "%s", f[11]);
    ck_assert_str_eq(f[12], "8589934592");
    ck_assert_msg(near(strtod(f[13], NULL), r.flops), "%s", f[13]);
    ck_assert_msg(near(strtod(f[14], NULL), r.energy_j), "%s", f[14]);
    ck_assert_msg(near(strtod(f[15], NULL), r.energy_j / t_s), "%s", f[15]);
    for (size_t i = 0; i < n; i++)
        ts_free(f[i]);
    ts_buf_free(&b);
    ts_results_free(&r);

    /* Undefined figures are empty fields. */
    ts_results_init(&r);
    ts_report_csv_row(&r, &b);
    ck_assert_msg(!strncmp(ts_buf_str(&b), ",,,0,0,0,0,0,0,,,,0,0,,,,", 25), "%s", ts_buf_str(&b));
    ts_buf_free(&b);
    ts_results_free(&r);
}
END_TEST

static int count_tmp(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strstr(de->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

START_TEST(test_write_atomic)
{
    ts_results r;
    build(&r);
    ts_err e;
    ts_err_init(&e);
    char dir[] = "/tmp/ts_report_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[256];

    /* Into a directory that does not exist: fails, leaves nothing. */
    snprintf(path, sizeof path, "%s/missing/report.json", dir);
    ck_assert_int_eq(ts_report_write(&r, TS_FMT_JSON, path, &e), TS_EIO);
    ck_assert_str_eq(e.file, path);
    ck_assert_ptr_nonnull(strstr(e.msg, "cannot write"));
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(count_tmp(dir), 0);

    /* Over a directory: the rename fails and the temporary file is removed. */
    snprintf(path, sizeof path, "%s/taken", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(ts_report_write(&r, TS_FMT_TEXT, path, &e), TS_EIO);
    ck_assert_int_eq(count_tmp(dir), 0);
    rmdir(path);

    /* Each format: the file holds exactly the rendering, and no temporary file is left. */
    for (int fmt = TS_FMT_TEXT; fmt <= TS_FMT_CSV; fmt++) {
        snprintf(path, sizeof path, "%s/report.%d", dir, fmt);
        ck_assert_int_eq(ts_report_write(&r, (ts_format)fmt, path, &e), TS_OK);
        ck_assert_int_eq(count_tmp(dir), 0);
        ts_buf want = TS_BUF_INIT;
        if (fmt == TS_FMT_TEXT)
            ts_report_text(&r, &want);
        else if (fmt == TS_FMT_JSON)
            ts_report_json(&r, &want);
        else {
            ts_report_csv_header(&r, &want);
            ts_report_csv_row(&r, &want);
        }
        char *data;
        size_t len;
        ck_assert_int_eq(ts_read_file(path, &data, &len, &e), TS_OK);
        ck_assert_uint_eq(len, want.len);
        ck_assert_int_eq(memcmp(data, want.data, len), 0);
        ts_free(data);
        ts_buf_free(&want);
        remove(path);
    }
    ck_assert_int_eq(ts_report_write(&r, (ts_format)7, path, &e), TS_EINTERNAL);

    /* Out of memory while rendering: reported, nothing written. */
    snprintf(path, sizeof path, "%s/oom.json", dir);
    ts_alloc_fail_after(3);
    ts_status st = ts_report_write(&r, TS_FMT_JSON, path, &e);
    ts_alloc_fail_after(0);
    ck_assert_int_eq(st, TS_ENOMEM);
    ck_assert_int_ne(access(path, F_OK), 0);
    ck_assert_int_eq(rmdir(dir), 0); /* empty */
    ts_err_free(&e);
    ts_results_free(&r);
}
END_TEST

/* Edge cases of the text layout: wide tables, empty arrays and histograms, negative and huge
 * numbers. */
START_TEST(test_text_edges)
{
    ts_results r;
    ts_results_init(&r);
    const char *cols[20];
    char names[20][16];
    for (int i = 0; i < 20; i++) {
        snprintf(names[i], sizeof names[i], "c%d", i);
        cols[i] = names[i];
    }
    int t = ts_stats_table(r.stats, "wide", "", 20, cols, NULL);
    double row[20];
    for (int i = 0; i < 20; i++)
        row[i] = -1234.5 * i;
    ck_assert_int_eq(ts_stats_row(r.stats, t, row), TS_OK);
    ck_assert_int_eq(ts_stats_array(r.stats, "none", "", "", NULL, 0), TS_OK);
    ck_assert_int_eq(ts_stats_hist(r.stats, "h0", "", "", NULL, 0, 0, 1), TS_OK);
    ck_assert_int_eq(ts_stats_f64(r.stats, "huge", "", "", 1e300), TS_OK);
    ck_assert_int_eq(ts_stats_f64(r.stats, "nan", "", "", NAN), TS_OK);
    ts_buf b = TS_BUF_INIT;
    ts_report_text(&r, &b);
    const char *s = ts_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(s, "    … 4 more columns\n"));
    ck_assert_ptr_nonnull(strstr(s, "-18,517.5"));     /* c15 */
    ck_assert_ptr_null(strstr(s, "-19,752"));          /* c16 is cut */
    ck_assert_msg(strstr(s, "  none      0    -     -    -       -\n") != NULL, "got:\n%s", s);
    ck_assert_ptr_nonnull(strstr(s, "1e+300"));
    ck_assert_ptr_null(strstr(s, " \n"));
    ts_buf_reset(&b);
    ts_report_json(&r, &b);
    json_error_t je;
    json_t *root = json_loads(ts_buf_str(&b), 0, &je);
    ck_assert_msg(root != NULL, "invalid json: %s", je.text);
    json_t *st = json_object_get(root, "stats");
    ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(json_object_get(st, "wide"), "table"),
                                                      "columns")), 20);
    get(get(st, "nan", JSON_OBJECT), "value", JSON_NULL);
    json_decref(root);
    ts_buf_free(&b);
    ts_results_free(&r);
}
END_TEST

/* Out of memory at any point of rendering: no crash, no leak, the buffer says so. */
START_TEST(test_render_oom)
{
    ts_results r;
    build(&r);
    int completed = 0;
    for (long n = 1; n < 400; n++) {
        for (int fmt = 0; fmt < 2; fmt++) {
            ts_buf b = TS_BUF_INIT;
            ts_alloc_fail_after(n);
            if (fmt == 0)
                ts_report_text(&r, &b);
            else
                ts_report_json(&r, &b);
            long failed = ts_alloc_failures();
            ts_alloc_fail_after(0);
            ck_assert_int_eq(b.oom, failed > 0);
            completed += !failed;
            ts_buf_free(&b);
        }
    }
    ck_assert_int_gt(completed, 0);
    ts_results_free(&r);
}
END_TEST

/* The same results give the same bytes. */
START_TEST(test_deterministic)
{
    ts_results a, b;
    build(&a);
    build(&b);
    ts_buf x = TS_BUF_INIT, y = TS_BUF_INIT;
    ts_report_json(&a, &x);
    ts_report_json(&b, &y);
    ck_assert_str_eq(ts_buf_str(&x), ts_buf_str(&y));
    ts_buf_free(&x);
    ts_buf_free(&y);
    ts_results_free(&a);
    ts_results_free(&b);
}
END_TEST

/* A lowered model's outputs: the checksum is FNV-1a over the f32 bits (-0 as +0), in text, JSON
 * and CSV. */
START_TEST(test_outputs)
{
    ts_results r;
    build(&r);
    ts_err e;
    ts_err_init(&e);
    const float v[3] = {1.0f, -2.5f, -0.0f};
    ck_assert_int_eq(ts_results_output(&r, "logits", 2, (int64_t[]){1, 3}, v, 3, &e), TS_OK);
    ck_assert_uint_eq(r.outputs[0].checksum, 0x00f3a969ef350f78ull); /* of 1, -2.5, +0 (numpy) */
    ck_assert_double_eq(r.outputs[0].max_abs, 2.5);
    ts_buf b = TS_BUF_INIT;
    ts_report_text(&r, &b);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&b), "  logits  [1, 3]  00f3a969ef350f78  2.5"));
    ts_buf_reset(&b);
    ts_report_json(&r, &b);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&b), "\"checksum\": \"00f3a969ef350f78\""));
    ts_buf_reset(&b);
    ts_report_csv_row(&r, &b);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&b), ",logits[1x3]:00f3a969ef350f78:2.5,"));
    ts_buf_free(&b);
    ts_results_free(&r);
    ts_err_free(&e);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("report");
    TCase *tc = tcase_create("report");
    tcase_add_test(tc, test_format_parse);
    tcase_add_test(tc, test_text_golden);
    tcase_add_test(tc, test_peak_share);
    tcase_add_test(tc, test_json);
    tcase_add_test(tc, test_json_empty);
    tcase_add_test(tc, test_csv);
    tcase_add_test(tc, test_outputs);
    tcase_add_test(tc, test_write_atomic);
    tcase_add_test(tc, test_deterministic);
    tcase_add_test(tc, test_text_edges);
    tcase_add_test(tc, test_render_oom);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
