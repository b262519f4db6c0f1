/* tests/test_config.c — loading, validating and printing configs (core/config.h).
 *
 * A fake family, "testchip", has one key of every type. Fixtures for base files are in
 * tests/data/config/, found through TS_SOURCE_ROOT (set by tests/meson.build).
 */
#include <check.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/config.h"

/* ---- the test family ---- */
typedef struct testchip_cfg {
    int64_t tiles;
    uint64_t sram;
    double clock;
    bool ecc;
    char *label;
    int mode;
    ts_strlist units;
    ts_intlist lanes;
    double link_bw;
    int64_t latency;
    double op_energy;
    int64_t offset;
    uint64_t total_sram; /* derived by the check */
} testchip_cfg;

static const char *const modes[] = {"fast", "exact", "off", NULL};

static const ts_cfg_key testchip_keys[] = {
    {"tiles", TS_CFG_INT, TS_UNIT_NONE, 1, 65536, NULL, "number of tiles", offsetof(testchip_cfg, tiles), NULL},
    {"tile.sram", TS_CFG_UINT, TS_UNIT_BYTES, 1024, 2097152, "256 KiB", "SRAM per tile",
     offsetof(testchip_cfg, sram), NULL},
    {"tile.clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1e6, 1e10, "1.6 GHz", "tile clock", offsetof(testchip_cfg, clock),
     NULL},
    {"tile.ecc", TS_CFG_BOOL, TS_UNIT_NONE, 0, -1, "false", "ECC on SRAM", offsetof(testchip_cfg, ecc), NULL},
    {"tile.op_energy", TS_CFG_FLOAT, TS_UNIT_ENERGY, 0, -1, "0.9 pJ", "energy of one op",
     offsetof(testchip_cfg, op_energy), NULL},
    {"label", TS_CFG_STRING, TS_UNIT_NONE, 0, -1, "plain", "free label", offsetof(testchip_cfg, label), NULL},
    {"exchange.mode", TS_CFG_ENUM, TS_UNIT_NONE, 0, -1, "exact", "exchange model", offsetof(testchip_cfg, mode),
     modes},
    {"units", TS_CFG_STRLIST, TS_UNIT_NONE, 0, -1, "[alu, fpu]", "functional units",
     offsetof(testchip_cfg, units), NULL},
    {"exchange.lanes", TS_CFG_INTLIST, TS_UNIT_NONE, 1, 64, "[4, 8]", "lanes per link",
     offsetof(testchip_cfg, lanes), NULL},
    {"exchange.link.bandwidth", TS_CFG_FLOAT, TS_UNIT_BANDWIDTH, 0, -1, "6.3 GB/s", "link bandwidth",
     offsetof(testchip_cfg, link_bw), NULL},
    {"exchange.link.latency", TS_CFG_INT, TS_UNIT_CYCLES, 0, 1000, "12", "link latency",
     offsetof(testchip_cfg, latency), NULL},
    {"offset", TS_CFG_INT, TS_UNIT_NONE, 0, -1, "-3", "signed, unbounded", offsetof(testchip_cfg, offset), NULL},
};

/* Cross-key check: total SRAM at most 1 GiB; derives total_sram. */
static ts_status testchip_check(void *p, ts_err *err)
{
    testchip_cfg *c = p;
    c->total_sram = c->sram * (uint64_t)c->tiles;
    if (c->total_sram > (1u << 30))
        return ts_err_set(err, TS_EINPUT, "total sram %llu B exceeds 1 GiB", (unsigned long long)c->total_sram);
    return TS_OK;
}

static const ts_schema testchip = {
    "testchip", "fake chip for config tests", testchip_keys, sizeof testchip_keys / sizeof testchip_keys[0],
    sizeof(testchip_cfg), testchip_check,
};

/* A family whose default does not parse: loading must say it is a bug. */
static const ts_cfg_key badchip_keys[] = {
    {"clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 0, -1, "3 ns", "clock", 0, NULL},
};
static const ts_schema badchip = {"badchip", "bad default", badchip_keys, 1, sizeof(double), NULL};

static const ts_schema otherchip = {"otherchip", "another", testchip_keys, 1, sizeof(testchip_cfg), NULL};

static const ts_schema *lookup(const char *arch)
{
    if (!strcmp(arch, "testchip"))
        return &testchip;
    if (!strcmp(arch, "badchip"))
        return &badchip;
    if (!strcmp(arch, "otherchip"))
        return &otherchip;
    return NULL;
}

/* Built-in files for `base:` and top-level names. */
static int builtin(const char *name, const char **text, size_t *len)
{
    static const char chipbase[] = "arch: testchip\ntiles: 64\nlabel: from-builtin\n";
    if (!strcmp(name, "chipbase")) {
        *text = chipbase;
        *len = sizeof chipbase - 1;
        return 0;
    }
    return -1;
}

static const ts_config_opts opts = {lookup, builtin, NULL, 0};

static const testchip_cfg *data(const ts_config *c) { return ts_config_data(c); }

/* Load text as "t.yaml"; must succeed. */
static ts_config *load_ok(const char *text)
{
    ts_config *c = NULL;
    ts_err err;
    ts_err_init(&err);
    ts_status st = ts_config_load_string(&c, "t.yaml", text, strlen(text), &opts, &err);
    char line[1400];
    ts_err_format(&err, line, sizeof line);
    ck_assert_msg(st == TS_OK, "load failed: %s", line);
    ck_assert_ptr_nonnull(c);
    ts_err_free(&err);
    return c;
}

/* Load text as "t.yaml" with o; must fail with st and exactly the formatted error want. */
static void load_bad_opts(const char *text, const ts_config_opts *o, ts_status want_st, const char *want)
{
    ts_config *c = (ts_config *)1;
    ts_err err;
    ts_err_init(&err);
    ts_status st = ts_config_load_string(&c, "t.yaml", text, strlen(text), o, &err);
    char line[1400];
    ts_err_format(&err, line, sizeof line);
    ck_assert_msg(st == want_st, "status %d, want %d (%s)", st, want_st, line);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(line, want);
    ts_err_free(&err);
}

static void load_bad(const char *text, const char *want) { load_bad_opts(text, &opts, TS_EINPUT, want); }

static const char *fixture(const char *name)
{
    static char path[1024];
    const char *root = getenv("TS_SOURCE_ROOT");
    snprintf(path, sizeof path, "%s/tests/data/config/%s", root ? root : ".", name);
    return path;
}

/* Load a fixture; returns status and fills line with the formatted error (path stripped to the
 * fixture's name so expectations do not depend on where the tree lives). */
static ts_status load_fixture(const char *name, const ts_config_opts *o, ts_config **c, char *line, size_t n)
{
    ts_err err;
    ts_err_init(&err);
    ts_status st = ts_config_load(c, fixture(name), o, &err);
    char full[1400];
    ts_err_format(&err, full, sizeof full);
    /* Drop every occurrence of the fixture directory. */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", fixture(""));
    size_t dl = strlen(dir), k = 0;
    for (const char *s = full; *s && k + 1 < n;) {
        if (!strncmp(s, dir, dl))
            s += dl;
        else
            line[k++] = *s++;
    }
    line[k] = 0;
    ts_err_free(&err);
    return st;
}

/* ---- tests ---- */

START_TEST(full_nested)
{
    ts_config *c = load_ok("arch: testchip\n"
                           "name: chip-a\n"
                           "description: a test chip\n"
                           "tiles: 1216\n"
                           "tile:\n"
                           "  sram: 624 KiB\n"
                           "  clock: 1.33 GHz\n"
                           "  ecc: yes\n"
                           "  op_energy: 1.2 pJ\n"
                           "label: \"hello: world\"\n"
                           "exchange:\n"
                           "  mode: fast\n"
                           "  lanes: [1, 2, 64]\n"
                           "  link:\n"
                           "    bandwidth: 100 Gbit/s\n"
                           "    latency: 7 cycles\n"
                           "units:\n"
                           "  - alu\n"
                           "  - mac\n"
                           "  - sfu\n"
                           "offset: -40\n"
                           "energy:\n"
                           "  table: jouppi7\n"
                           "  static_power: 2.5 W\n");
    const testchip_cfg *d = data(c);
    ck_assert_int_eq(d->tiles, 1216);
    ck_assert_uint_eq(d->sram, 624 * 1024);
    ck_assert_double_eq_tol(d->clock, 1.33e9, 1e-3);
    ck_assert(d->ecc);
    ck_assert_double_eq_tol(d->op_energy, 1.2e-12, 1e-24);
    ck_assert_str_eq(d->label, "hello: world");
    ck_assert_int_eq(d->mode, 0);
    ck_assert_uint_eq(d->lanes.n, 3);
    ck_assert_int_eq(d->lanes.v[0], 1);
    ck_assert_int_eq(d->lanes.v[2], 64);
    ck_assert_double_eq_tol(d->link_bw, 12.5e9, 1e-3);
    ck_assert_int_eq(d->latency, 7);
    ck_assert_uint_eq(d->units.n, 3);
    ck_assert_str_eq(d->units.v[0], "alu");
    ck_assert_str_eq(d->units.v[2], "sfu");
    ck_assert_int_eq(d->offset, -40);
    ck_assert_uint_eq(d->total_sram, 1216ull * 624 * 1024); /* the check ran */
    ck_assert_str_eq(ts_config_arch(c), "testchip");
    ck_assert_str_eq(ts_config_name(c), "chip-a");
    ck_assert_str_eq(ts_config_path(c), "t.yaml");
    ck_assert_str_eq(ts_config_energy_table(c), "jouppi7");
    ck_assert_double_eq_tol(ts_config_static_power(c), 2.5, 1e-12);
    ck_assert_ptr_eq(ts_config_schema(c), &testchip);
    ts_config_destroy(c);
    ts_config_destroy(NULL);
}
END_TEST

START_TEST(defaults)
{
    ts_config *c = load_ok("arch: testchip\ntiles: 2\n");
    const testchip_cfg *d = data(c);
    ck_assert_uint_eq(d->sram, 256 * 1024);
    ck_assert_double_eq_tol(d->clock, 1.6e9, 1e-3);
    ck_assert(!d->ecc);
    ck_assert_double_eq_tol(d->op_energy, 0.9e-12, 1e-24);
    ck_assert_str_eq(d->label, "plain");
    ck_assert_int_eq(d->mode, 1);
    ck_assert_uint_eq(d->units.n, 2);
    ck_assert_str_eq(d->units.v[1], "fpu");
    ck_assert_uint_eq(d->lanes.n, 2);
    ck_assert_int_eq(d->lanes.v[1], 8);
    ck_assert_double_eq_tol(d->link_bw, 6.3e9, 1e-3);
    ck_assert_int_eq(d->latency, 12);
    ck_assert_int_eq(d->offset, -3);
    ck_assert_str_eq(ts_config_name(c), "t"); /* the file's stem */
    ck_assert_str_eq(ts_config_energy_table(c), "horowitz45");
    ck_assert(ts_config_static_power(c) == 0);
    ts_config_destroy(c);
}
END_TEST

/* Keys read by path, as the lowerings read the machine figures they need. */
START_TEST(key_by_path)
{
    ts_config *c = load_ok("arch: testchip\ntiles: 2\ntile:\n  sram: 512 KiB\n");
    uint64_t v = 0;
    ck_assert_int_eq(ts_config_u64(c, "tile.sram", &v), 0); /* uint */
    ck_assert_uint_eq(v, 512 * 1024);
    ck_assert_int_eq(ts_config_u64(c, "tiles", &v), 0);      /* int */
    ck_assert_uint_eq(v, 2);
    ck_assert_int_eq(ts_config_u64(c, "tile.clock", &v), 0); /* float, truncated */
    ck_assert_uint_eq(v, 1600000000u);
    v = 7;
    ck_assert_int_eq(ts_config_u64(c, "label", &v), -1);     /* a string */
    ck_assert_int_eq(ts_config_u64(c, "tile.nothing", &v), -1);
    ck_assert_uint_eq(v, 7);
    const ts_cfg_key *k = ts_config_key(c, "exchange.link.latency");
    ck_assert_ptr_nonnull(k);
    ck_assert_str_eq(k->path, "exchange.link.latency");
    ck_assert_ptr_null(ts_config_key(c, "exchange.link"));
    ts_config_destroy(c);
}
END_TEST

START_TEST(flat_keys_and_units)
{
    /* Dotted keys inside a nested map, and units written without a space. */
    ts_config *c = load_ok("arch: testchip\n"
                           "tiles: 4\n"
                           "tile.sram: 1MiB\n"
                           "exchange:\n"
                           "  link.latency: 3 cycles\n"
                           "  link:\n"
                           "    bandwidth: 16Gbps\n"
                           "tile: {op_energy: 450fJ}\n"
                           "energy.static_power: 250 mW\n");
    const testchip_cfg *d = data(c);
    ck_assert_uint_eq(d->sram, 1048576);
    ck_assert_int_eq(d->latency, 3);
    ck_assert_double_eq_tol(d->link_bw, 2e9, 1e-3);
    ck_assert_double_eq_tol(d->op_energy, 450e-15, 1e-27);
    ck_assert_double_eq_tol(ts_config_static_power(c), 0.25, 1e-12);
    ts_config_destroy(c);
}
END_TEST

START_TEST(flat_equals_nested)
{
    ts_config *a = load_ok("arch: testchip\ntiles: 4\ntile.sram: 1MiB\ntile.clock: 800 MHz\n"
                           "exchange.link.bandwidth: 2 GiB/s\nenergy.static_power: 250 mW\n");
    ts_config *b = load_ok("# same values, other spelling\narch: testchip\nname: other\n"
                           "description: words do not count\n"
                           "tile: {clock: 0.8 GHz, sram: 1048576}\ntiles: 4\n"
                           "exchange:\n  link:\n    bandwidth: 2147483648 B/s\n");
    const testchip_cfg *da = data(a), *db = data(b);
    ck_assert_uint_eq(da->sram, 1048576);
    ck_assert_double_eq_tol(da->clock, 8e8, 1e-6);
    ck_assert_double_eq_tol(da->link_bw, 2147483648.0, 1e-3);
    ck_assert_double_eq_tol(ts_config_static_power(a), 0.25, 1e-12);
    ck_assert_uint_eq(db->sram, da->sram);
    ck_assert_uint_eq(ts_config_fingerprint(a), ts_config_fingerprint(b));
    ck_assert_uint_ne(ts_config_fingerprint(a), 0);

    /* One value changed: another fingerprint. */
    ts_config *c = load_ok("arch: testchip\ntiles: 5\ntile.sram: 1MiB\ntile.clock: 800 MHz\n"
                           "exchange.link.bandwidth: 2 GiB/s\n");
    ck_assert_uint_ne(ts_config_fingerprint(a), ts_config_fingerprint(c));
    ts_config *e = load_ok("arch: testchip\ntiles: 4\ntile.sram: 1MiB\ntile.clock: 800 MHz\n"
                           "exchange.link.bandwidth: 2 GiB/s\nunits: [alu]\n");
    ck_assert_uint_ne(ts_config_fingerprint(a), ts_config_fingerprint(e));
    ts_config_destroy(a);
    ts_config_destroy(b);
    ts_config_destroy(c);
    ts_config_destroy(e);
}
END_TEST

START_TEST(yaml_syntax_errors)
{
    /* Bad indentation: a key deeper than its siblings. */
    load_bad("arch: testchip\ntile:\n  sram: 1 KiB\n   clock: 1 GHz\n",
             "t.yaml:4:9: bad yaml: mapping values are not allowed in this context");
    load_bad("arch: testchip\ntiles: [1, 2\n",
             "t.yaml:3:1: bad yaml: did not find expected ',' or ']' (while parsing a flow sequence at line 2, col 8)");
    load_bad("arch: testchip\n\tx: 1\n",
             "t.yaml:2:1: bad yaml: found a tab character that violates indentation (while scanning a plain "
             "scalar at line 1, col 7)");
    load_bad("arch: testchip\n---\ntiles: 1\n", "t.yaml:2:1: more than one yaml document (a config is one document)");
    load_bad("arch: testchip\ntiles: &n 4\nlabel: *n\n", "t.yaml:3:8: yaml aliases (*n) are not supported");
    load_bad("arch: testchip\n? [a, b]\n: 1\n", "t.yaml:2:3: a map key must be plain text, not a list");
    load_bad("- arch\n- testchip\n", "t.yaml:1:1: expected a map of keys at the top level, got a list");
    load_bad("just text\n", "t.yaml:1:1: expected a map of keys at the top level, got a single value");
    load_bad("arch: testchip\nlabel: \"\xff\"\n", "t.yaml:2:9: bad yaml: invalid leading UTF-8 octet");
}
END_TEST

START_TEST(unknown_keys)
{
    load_bad("arch: testchip\ntiles: 4\ntile:\n  sarm: 1 KiB\n",
             "t.yaml:4:3: unknown key 'tile.sarm' (did you mean 'tile.sram'?)");
    load_bad("arch: testchip\ntiles: 4\ntile.sarm: 1 KiB\n",
             "t.yaml:3:1: unknown key 'tile.sarm' (did you mean 'tile.sram'?)");
    /* A transposition counts as one edit. */
    load_bad("arch: testchip\ntiels: 4\n", "t.yaml:2:1: unknown key 'tiels' (did you mean 'tiles'?)");
    /* A misspelt group. */
    load_bad("arch: testchip\ntiles: 4\ntilee:\n  sram: 1 KiB\n",
             "t.yaml:3:1: unknown key 'tilee' (did you mean 'tile'?)");
    /* The right key in the wrong place: a suffix match. */
    load_bad("arch: testchip\ntiles: 4\nsram: 1 KiB\n", "t.yaml:3:1: unknown key 'sram' (did you mean 'tile.sram'?)");
    load_bad("arch: testchip\ntiles: 4\nexchange:\n  bandwidth: 1 GB/s\n",
             "t.yaml:4:3: unknown key 'exchange.bandwidth' (did you mean 'exchange.link.bandwidth'?)");
    /* Nothing close. */
    load_bad("arch: testchip\ntiles: 4\nwhatever: 1\n", "t.yaml:3:1: unknown key 'whatever'");
    /* A group given a value. */
    load_bad("arch: testchip\ntiles: 4\ntile: 5\n",
             "t.yaml:3:7: tile: expected a map of keys like 'tile.sram', got a single value");
    /* Keys nested under arch are unknown. */
    load_bad("arch: testchip\ntiles: 4\nenergy:\n  tabel: x\n",
             "t.yaml:4:3: unknown key 'energy.tabel' (did you mean 'energy.table'?)");
}
END_TEST

START_TEST(type_errors)
{
    load_bad("arch: testchip\ntiles: 4\ntile:\n  clock: fast\n",
             "t.yaml:4:10: tile.clock: expected a frequency like '1.6 GHz', got 'fast'");
    load_bad("arch: testchip\ntiles: 4\ntile.clock: 3 ns\n",
             "t.yaml:3:13: tile.clock: expected a frequency like '1.6 GHz', got '3 ns' ('ns' is a unit of time; use "
             "Hz, kHz, MHz, GHz or THz)");
    load_bad("arch: testchip\ntiles: 0\n", "t.yaml:2:8: tiles: 0 is out of range [1, 65536]");
    load_bad("arch: testchip\ntiles: 70000\n", "t.yaml:2:8: tiles: 70000 is out of range [1, 65536]");
    load_bad("arch: testchip\ntiles: 1\ntile.sram: 4 MiB\n",
             "t.yaml:3:12: tile.sram: 4 MiB is out of range [1 KiB, 2 MiB]");
    load_bad("arch: testchip\ntiles: 2.5\n", "t.yaml:2:8: tiles: expected a whole number, got '2.5'");
    load_bad("arch: testchip\ntiles: 1\ntile.sram: 1000.5 B\n",
             "t.yaml:3:12: tile.sram: expected a whole number of B (size), got '1000.5 B'");
    load_bad("arch: testchip\ntiles: four\n", "t.yaml:2:8: tiles: expected a whole number like '4', got 'four'");
    load_bad("arch: testchip\ntiles:\n  a: 1\n", "t.yaml:3:3: tiles: expected a whole number like '4', got a map");
    load_bad("arch: testchip\ntiles: [1]\n", "t.yaml:2:8: tiles: expected a whole number like '4', got a list");
    load_bad("arch: testchip\ntiles:\n", "t.yaml:2:7: tiles: expected a whole number like '4', got nothing");
    load_bad("arch: testchip\ntiles: 1\nlabel: {a: 1}\n", "t.yaml:3:8: label: expected a string, got a map");
    load_bad("arch: testchip\ntiles: 1\ntile.ecc: maybe\n",
             "t.yaml:3:11: tile.ecc: expected true or false, got 'maybe'");
    load_bad("arch: testchip\ntiles: 1\nexchange.mode: quick\n",
             "t.yaml:3:16: exchange.mode: unknown choice 'quick' (expected one of fast, exact, off)");
    load_bad("arch: testchip\ntiles: 1\nexchange.lanes: [4, 0, 8]\n",
             "t.yaml:3:21: exchange.lanes[1]: 0 is out of range [1, 64]");
    load_bad("arch: testchip\ntiles: 1\nexchange.lanes: 4\n",
             "t.yaml:3:17: exchange.lanes: expected a list of a whole number like '4', got '4'");
    load_bad("arch: testchip\ntiles: 1\nunits: [alu, [x]]\n",
             "t.yaml:3:14: units[1]: expected a list of strings like [a, b], got a list");
    load_bad("arch: testchip\ntiles: 1\nexchange.link.latency: 3 ns\n",
             "t.yaml:3:24: exchange.link.latency: expected a cycle count like '12 cycles', got '3 ns' ('ns' is a "
             "unit of time; use cycles)");
    load_bad("arch: testchip\ntiles: 99999999999999999999\n",
             "t.yaml:2:8: tiles: 99999999999999999999 is out of range [1, 65536]");
    load_bad("arch: testchip\ntiles: 1\noffset: 99999999999999999999\n",
             "t.yaml:3:9: offset: '99999999999999999999' is too large for a 64-bit whole number");
    load_bad("arch: testchip\ntiles: 1\nenergy.static_power: -1 W\n",
             "t.yaml:3:22: energy.static_power: -1 W is out of range [0 W, 1 MW]");
}
END_TEST

START_TEST(structure_errors)
{
    load_bad("arch: testchip\ntiles: 1\ntiles: 2\n", "t.yaml:3:1: duplicate key 'tiles' (first at line 2, col 1)");
    load_bad("arch: testchip\ntiles: 1\ntile:\n  sram: 2 KiB\n  sram: 4 KiB\n",
             "t.yaml:5:3: duplicate key 'tile.sram' (first at line 4, col 3)");
    load_bad("arch: testchip\ntiles: 1\ntile.sram: 2 KiB\ntile:\n  sram: 4 KiB\n",
             "t.yaml:5:3: duplicate key 'tile.sram' (first at line 3, col 1)");
    load_bad("arch: testchip\n", "t.yaml:1:1: missing required key 'tiles'");
    load_bad("tiles: 4\n", "t.yaml:1:1: missing required key 'arch'");
    load_bad("", "t.yaml:1:1: missing required key 'arch'");
    load_bad("arch: nochip\ntiles: 4\n", "t.yaml:1:7: unknown arch 'nochip'");
    load_bad("arch: [testchip]\n", "t.yaml:1:7: arch: expected a family name, got a list");
    load_bad("arch: testchip\nbase:\n", "t.yaml:2:6: base: expected a config file or built-in name, got nothing");
    load_bad("arch: testchip\ntiles: 4096\ntile.sram: 2 MiB\n", "t.yaml: total sram 8589934592 B exceeds 1 GiB");
    load_bad_opts("arch: badchip\n", &opts, TS_EINTERNAL,
                  "schema 'badchip': bad default '3 ns' for clock: expected a frequency like '1.6 GHz', got '3 ns' "
                  "('ns' is a unit of time; use Hz, kHz, MHz, GHz or THz)");
}
END_TEST

/* Duplicate keys are found by sorting, not by comparing each key with every earlier one: 60,000
 * keys in one map took 6 s, a 100 MB file never finished. The first duplicate in document order
 * is still the one reported. */
START_TEST(many_keys)
{
    size_t n = 60000;
    ts_buf b = TS_BUF_INIT;
    ts_buf_puts(&b, "arch: testchip\ntiles: 1\nnotes:\n");
    for (size_t i = 0; i < n; i++)
        ts_buf_printf(&b, "  k%zu: %zu\n", i, i);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    load_bad(ts_buf_str(&b), "t.yaml:3:1: unknown key 'notes'");
    ts_buf_printf(&b, "  k%zu: again\n  k7: again\n", n - 1);
    load_bad(ts_buf_str(&b), "t.yaml:60004:3: duplicate key 'notes.k59999' (first at line 60003, col 3)");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    ck_assert_msg(s < 3.0, "two loads of %zu keys took %.2f s", n, s);
    ts_buf_free(&b);
    /* small maps: the first repeat wins, whatever repeats later */
    load_bad("arch: testchip\ntiles: 1\na: 1\nb: 2\nb: 3\na: 4\n", "t.yaml:5:1: duplicate key 'b' (first at line 4, col 1)");
}
END_TEST

START_TEST(bases)
{
    ts_config *c = NULL;
    char line[1400];
    ck_assert_int_eq(load_fixture("base.yaml", &opts, &c, line, sizeof line), TS_OK);
    const testchip_cfg *d = data(c);
    ck_assert_int_eq(d->tiles, 16);
    ck_assert_str_eq(ts_config_name(c), "base-chip");
    ts_config_destroy(c);

    ck_assert_msg(load_fixture("derived.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    d = data(c);
    ck_assert_int_eq(d->tiles, 32);                     /* overridden */
    ck_assert_double_eq_tol(d->clock, 1.5e9, 1e-3);     /* overridden, flat form */
    ck_assert_uint_eq(d->sram, 512 * 1024);             /* from the base */
    ck_assert_int_eq(d->mode, 0);                       /* from the base */
    ck_assert_str_eq(ts_config_arch(c), "testchip");    /* only in the base */
    ck_assert_str_eq(ts_config_name(c), "derived");     /* a base's name is not inherited */
    ts_config_destroy(c);

    /* A base chain and one file with the same values have the same fingerprint. */
    ck_assert_msg(load_fixture("derived.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    ts_config *flat = load_ok("arch: testchip\ntiles: 32\ntile.sram: 512 KiB\ntile.clock: 1.5 GHz\n"
                              "exchange: {mode: fast, lanes: [2, 4]}\n");
    ck_assert_uint_eq(ts_config_fingerprint(c), ts_config_fingerprint(flat));
    ts_config_destroy(flat);
    ts_config_destroy(c);

    ck_assert_msg(load_fixture("derived2.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    d = data(c);
    ck_assert_int_eq(d->tiles, 32);
    ck_assert_uint_eq(d->lanes.n, 1);
    ck_assert_int_eq(d->lanes.v[0], 8);
    ck_assert_str_eq(ts_config_name(c), "second");
    ts_config_destroy(c);

    ck_assert_msg(load_fixture("from_builtin.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    d = data(c);
    ck_assert_int_eq(d->tiles, 64);
    ck_assert(d->ecc);
    ck_assert_str_eq(d->label, "from-builtin");
    ts_config_destroy(c);

    ck_assert_msg(load_fixture("no_ext.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    ck_assert_int_eq(data(c)->tiles, 8);
    ck_assert_uint_eq(data(c)->sram, 512 * 1024); /* from base.yaml */
    ts_config_destroy(c);

    /* An energy table file beside the config is found there; a built-in name stays as written. */
    ck_assert_msg(load_fixture("with_energy.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    ck_assert_str_eq(ts_config_energy_table(c), fixture("my_energy.yaml"));
    ts_config_destroy(c);
    ck_assert_msg(load_fixture("derived.yaml", &opts, &c, line, sizeof line) == TS_OK, "%s", line);
    ck_assert_str_eq(ts_config_energy_table(c), "horowitz45");
    ts_config_destroy(c);

    ck_assert_int_eq(load_fixture("cycle_a.yaml", &opts, &c, line, sizeof line), TS_EINPUT);
    ck_assert_ptr_null(c);
    ck_assert_str_eq(line, "cycle_b.yaml:1:7: base cycle: cycle_a.yaml -> cycle_b.yaml -> cycle_a.yaml");
    ck_assert_int_eq(load_fixture("missing_base.yaml", &opts, &c, line, sizeof line), TS_EINPUT);
    ck_assert_str_eq(line, "missing_base.yaml:3:7: base 'no_such_file.yaml' not found (no file 'no_such_file.yaml' and no "
                     "built-in config of that name)");
    ck_assert_int_eq(load_fixture("other_arch.yaml", &opts, &c, line, sizeof line), TS_EINPUT);
    ck_assert_str_eq(line, "other_arch.yaml:2:7: arch 'otherchip' differs from arch 'testchip' of its base base.yaml");
    ck_assert_int_eq(load_fixture("bad_in_base.yaml", &opts, &c, line, sizeof line), TS_EINPUT);
    ck_assert_str_eq(line, "broken.yaml:3:10: tile.clock: expected a frequency like '1.6 GHz', got 'fast'");
    /* Without built-ins the base cannot be found. */
    ts_config_opts nob = {lookup, NULL, NULL, 0};
    ck_assert_int_eq(load_fixture("from_builtin.yaml", &nob, &c, line, sizeof line), TS_EINPUT);
    ck_assert_str_eq(line, "from_builtin.yaml:2:7: base 'chipbase' not found (no file 'chipbase')");
}
END_TEST

START_TEST(top_level_builtin)
{
    ts_config *c = NULL;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_config_load(&c, "chipbase", &opts, &err), TS_OK);
    ck_assert_str_eq(ts_config_name(c), "chipbase");
    ck_assert_str_eq(ts_config_path(c), "chipbase");
    ck_assert_int_eq(data(c)->tiles, 64);
    ts_config_destroy(c);
    ck_assert_int_eq(ts_config_load(&c, "chipbase.yaml", &opts, &err), TS_OK);
    ck_assert_str_eq(ts_config_name(c), "chipbase");
    ts_config_destroy(c);
    ck_assert_int_eq(ts_config_load(&c, "no_such_chip", &opts, &err), TS_EIO);
    char line[1400];
    ts_err_format(&err, line, sizeof line);
    ck_assert_str_eq(line, "no_such_chip: no such config file or built-in config");
    ck_assert_ptr_null(c);
    ck_assert_int_eq(ts_config_load(&c, "x.yaml", NULL, &err), TS_EINTERNAL);
    ts_err_free(&err);
}
END_TEST

START_TEST(sets)
{
    const char *many[] = {"tiles=8", "tile.clock = 2 GHz", "exchange.lanes=[3, 5, 7]", "units=a,b",
                          "label=x y", "energy.table=mine", "tile.ecc=on"};
    ts_config_opts o = {lookup, builtin, many, sizeof many / sizeof many[0]};
    ts_config *c = NULL;
    ts_err err;
    ts_err_init(&err);
    const char *text = "arch: testchip\ntiles: 4\ntile.clock: 1 GHz\n";
    ck_assert_int_eq(ts_config_load_string(&c, "t.yaml", text, strlen(text), &o, &err), TS_OK);
    const testchip_cfg *d = data(c);
    ck_assert_int_eq(d->tiles, 8);
    ck_assert_double_eq_tol(d->clock, 2e9, 1e-3);
    ck_assert_uint_eq(d->lanes.n, 3);
    ck_assert_int_eq(d->lanes.v[2], 7);
    ck_assert_uint_eq(d->units.n, 2);
    ck_assert_str_eq(d->units.v[1], "b");
    ck_assert_str_eq(d->label, "x y");
    ck_assert_str_eq(ts_config_energy_table(c), "mine");
    ck_assert(d->ecc);
    ts_config_destroy(c);
    ts_err_free(&err);

    /* Errors: file "--set", line = which --set (1-based), column of the value or key. */
    const char *bad1[] = {"tiles=8", "tile.clock=fast"};
    ts_config_opts o1 = {lookup, builtin, bad1, 2};
    load_bad_opts(text, &o1, TS_EINPUT, "--set:2:12: tile.clock: expected a frequency like '1.6 GHz', got 'fast'");
    const char *bad2[] = {"tile.sarm=1 KiB"};
    ts_config_opts o2 = {lookup, builtin, bad2, 1};
    load_bad_opts(text, &o2, TS_EINPUT, "--set:1:1: unknown key 'tile.sarm' (did you mean 'tile.sram'?)");
    const char *bad3[] = {"tiles"};
    ts_config_opts o3 = {lookup, builtin, bad3, 1};
    load_bad_opts(text, &o3, TS_EINPUT, "--set:1:1: expected key.path=value, got 'tiles'");
    const char *bad4[] = {"exchange.lanes=[1, 100]"};
    ts_config_opts o4 = {lookup, builtin, bad4, 1};
    load_bad_opts(text, &o4, TS_EINPUT, "--set:1:20: exchange.lanes[1]: 100 is out of range [1, 64]");
    const char *bad5[] = {"arch=otherchip"};
    ts_config_opts o5 = {lookup, builtin, bad5, 1};
    load_bad_opts(text, &o5, TS_EINPUT, "--set:1:1: arch cannot be changed with --set");
    const char *bad6[] = {"tiles="};
    ts_config_opts o6 = {lookup, builtin, bad6, 1};
    load_bad_opts(text, &o6, TS_EINPUT, "--set:1:7: tiles: expected a whole number like '4', got nothing");
    /* A --set value must be UTF-8, as a YAML file is (else the config's dump could not hold it). */
    const char *bad7[] = {"label=ok\xff"};
    ts_config_opts o8 = {lookup, builtin, bad7, 1};
    load_bad_opts(text, &o8, TS_EINPUT, "--set:1:7: label: the value is not UTF-8 text");
    const char *bad8[] = {"label=\xed\xa0\x80"}; /* a surrogate */
    ts_config_opts o9 = {lookup, builtin, bad8, 1};
    load_bad_opts(text, &o9, TS_EINPUT, "--set:1:7: label: the value is not UTF-8 text");
    /* A --set may supply a required key. */
    const char *need[] = {"tiles=3"};
    ts_config_opts o7 = {lookup, builtin, need, 1};
    ts_err_init(&err);
    ck_assert_int_eq(ts_config_load_string(&c, "t.yaml", "arch: testchip\n", 15, &o7, &err), TS_OK);
    ck_assert_int_eq(data(c)->tiles, 3);
    ts_config_destroy(c);
    ts_err_free(&err);
}
END_TEST

START_TEST(parse_value)
{
    char why[256];
    int64_t i = 0;
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[0], " 17 ", &i, why, sizeof why), TS_OK);
    ck_assert_int_eq(i, 17);
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[0], "0", &i, why, sizeof why), TS_EINPUT);
    ck_assert_str_eq(why, "0 is out of range [1, 65536]");
    uint64_t u = 0;
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[1], "1.5 KiB", &u, why, sizeof why), TS_OK);
    ck_assert_uint_eq(u, 1536);
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[1], "-2 KiB", &u, why, sizeof why), TS_EINPUT);
    ck_assert_str_eq(why, "-2 KiB is out of range [1 KiB, 2 MiB]");
    double f = 0;
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[2], "1.6GHz", &f, why, sizeof why), TS_OK);
    ck_assert_double_eq_tol(f, 1.6e9, 1e-3);
    int e = -1;
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[6], "OFF", &e, why, sizeof why), TS_OK);
    ck_assert_int_eq(e, 2);
    char *s = NULL;
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[5], "text", &s, why, sizeof why), TS_OK);
    ck_assert_str_eq(s, "text");
    ts_free(s);
    ts_intlist l = {0};
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[8], "[]", &l, why, sizeof why), TS_OK);
    ck_assert_uint_eq(l.n, 0);
    ts_free(l.v);
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[8], "1, x", &l, why, sizeof why), TS_EINPUT);
    ck_assert_str_eq(why, "item 2: expected a whole number like '4', got 'x'");
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[8], "1,,2", &l, why, sizeof why), TS_EINPUT);
    ck_assert_str_eq(why, "item 2: expected a whole number like '4', got ''");
    ts_strlist sl = {0};
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[7], "[a , b]", &sl, why, sizeof why), TS_OK);
    ck_assert_uint_eq(sl.n, 2);
    ck_assert_str_eq(sl.v[0], "a");
    ck_assert_str_eq(sl.v[1], "b");
    ts_free(sl.v[0]);
    ts_free(sl.v[1]);
    ts_free(sl.v);
    bool b = false;
    ck_assert_int_eq(ts_config_parse_value(&testchip_keys[3], "True", &b, why, sizeof why), TS_OK);
    ck_assert(b);
    ck_assert_int_eq(ts_config_parse_value(NULL, "x", &b, why, sizeof why), TS_EINTERNAL);
}
END_TEST

START_TEST(dump_round_trip)
{
    ts_config *a = load_ok("arch: testchip\nname: dumped\ntiles: 12\ntile: {sram: 624 KiB, clock: 1.33 GHz}\n"
                           "label: \"quote \\\" and \\\\ back\"\nunits: [x, \"y z\"]\nexchange.lanes: [1, 64]\n"
                           "energy.static_power: 3 W\n");
    ts_buf b = TS_BUF_INIT;
    ts_config_dump(a, &b);
    const char *y = ts_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(y, "arch: \"testchip\"\n"));
    ck_assert_ptr_nonnull(strstr(y, "tiles: 12\n"));
    ck_assert_ptr_nonnull(strstr(y, "tile:\n  sram: 638976  # 624 KiB\n  clock: 1330000000  # 1.33 GHz\n"));
    ck_assert_ptr_nonnull(strstr(y, "exchange:\n  mode: exact\n  lanes: [1, 64]\n  link:\n    bandwidth: "
                                    "6300000000  # 6.3 GB/s\n    latency: 12\n"));
    ck_assert_ptr_nonnull(strstr(y, "energy:\n  table: \"horowitz45\"\n  static_power: 3  # 3 W\n"));
    ck_assert_ptr_null(strstr(y, "base:"));
    /* The dump loads back to the same values. */
    ts_config *c = load_ok(y);
    ck_assert_uint_eq(ts_config_fingerprint(a), ts_config_fingerprint(c));
    ck_assert_str_eq(data(c)->label, "quote \" and \\ back");
    ck_assert_str_eq(data(c)->units.v[1], "y z");
    ck_assert_str_eq(ts_config_name(c), "dumped");
    ts_buf_free(&b);
    ts_config_destroy(a);
    ts_config_destroy(c);

    /* Every character a YAML string can hold comes back: C0 and C1 controls, DEL, NEL and the
     * line and paragraph separators (YAML 1.1 line breaks, folded into spaces when written raw in
     * double quotes), the byte-order mark, a tab, a backslash, non-ASCII text. The dump escaped
     * only what JSON escapes: C1 and DEL made a file that did not load, NEL one that loaded as a
     * space with another fingerprint. */
    a = load_ok("arch: testchip\ntiles: 1\nlabel: \"a\\x9eb\\x7fc\\Nd\\Le\\Pf\\x01g\\th\\\\i\\uFEFFj\\u00e9\\U0001F600\"\n"
                "units: [\"\\N\", \"\\x85\\x80\"]\n");
    ck_assert_str_eq(data(a)->label, "a\xc2\x9e" "b\x7f" "c\xc2\x85" "d\xe2\x80\xa8" "e\xe2\x80\xa9" "f\x01"
                                     "g\th\\i\xef\xbb\xbf" "j\xc3\xa9\xf0\x9f\x98\x80");
    ts_config_dump(a, &b);
    c = load_ok(ts_buf_str(&b));
    ck_assert_str_eq(data(c)->label, data(a)->label);
    ck_assert_str_eq(data(c)->units.v[0], "\xc2\x85");
    ck_assert_str_eq(data(c)->units.v[1], "\xc2\x85\xc2\x80");
    ck_assert_uint_eq(ts_config_fingerprint(a), ts_config_fingerprint(c));
    ts_buf_free(&b);
    ts_config_destroy(a);
    ts_config_destroy(c);

    /* Values beyond 64-bit integers and fractions print exactly too. */
    a = load_ok("arch: testchip\ntiles: 1\nexchange.link.bandwidth: 3.5e53\ntile.op_energy: 0.1 pJ\n");
    ts_config_dump(a, &b);
    y = ts_buf_str(&b);
    ck_assert_ptr_nonnull(strstr(y, "    bandwidth: 3.5e+53  # 3.5e+38 PB/s\n"));
    ck_assert_ptr_nonnull(strstr(y, "  op_energy: 1e-13  # 100 fJ\n"));
    c = load_ok(y);
    ck_assert_uint_eq(ts_config_fingerprint(a), ts_config_fingerprint(c));
    ts_buf_free(&b);
    ts_config_destroy(a);
    ts_config_destroy(c);
}
END_TEST

START_TEST(schema_print)
{
    ts_buf b = TS_BUF_INIT;
    ts_schema_print(&testchip, &b);
    const char *s = ts_buf_str(&b);
    for (size_t i = 0; i < testchip.nkeys; i++) {
        char head[128];
        snprintf(head, sizeof head, "\n%s\n    type:", testchip_keys[i].path);
        ck_assert_msg(strstr(s, head), "no entry for %s", testchip_keys[i].path);
        ck_assert_ptr_nonnull(strstr(s, testchip_keys[i].desc));
    }
    ck_assert_ptr_nonnull(strstr(s, "arch: testchip — fake chip for config tests\n"));
    ck_assert_ptr_nonnull(strstr(s, "\ntiles\n    type:     integer\n    range:    1 .. 65536\n"
                                    "    default:  required\n    number of tiles\n"));
    ck_assert_ptr_nonnull(strstr(s, "\ntile.sram\n    type:     unsigned integer, size (base unit B)\n"
                                    "    range:    1 KiB .. 2 MiB\n    default:  256 KiB\n"));
    ck_assert_ptr_nonnull(strstr(s, "\nexchange.mode\n    type:     choice\n    choices:  fast, exact, off\n"));
    ck_assert_ptr_nonnull(strstr(s, "\nenergy.static_power\n"));
    ck_assert_ptr_nonnull(strstr(s, "\nname\n    type:     string\n    default:  the file's stem\n"));
    ts_buf_free(&b);
}
END_TEST

/* Fail each allocation in turn: every failure is TS_ENOMEM with nothing leaked (the sanitizer
 * build checks the leaks), and once past the last allocation the load succeeds. */
static void oom_loop(const char *name, const char *text, const ts_config_opts *o, bool from_file)
{
    bool succeeded = false;
    long nomem = 0;
    for (long n = 1; n < 5000 && !succeeded; n++) {
        ts_config *c = NULL;
        ts_err err;
        ts_err_init(&err);
        ts_alloc_fail_after(n);
        ts_status st = from_file ? ts_config_load(&c, name, o, &err)
                                 : ts_config_load_string(&c, name, text, strlen(text), o, &err);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (st == TS_OK) {
            ck_assert_int_eq(failed, 0);
            ck_assert_ptr_nonnull(c);
            succeeded = true;
        } else {
            ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d (%s)", n, st, err.msg);
            ck_assert_int_eq(failed, 1);
            ck_assert_ptr_null(c);
            nomem++;
        }
        ts_config_destroy(c);
        ts_err_free(&err);
    }
    ck_assert(succeeded);
    ck_assert_int_gt(nomem, 20); /* the loop really went through the allocations */
}

START_TEST(out_of_memory)
{
    const char *three[] = {"tiles=9", "units=[p, q]", "exchange.lanes=1,2"};
    ts_config_opts o = {lookup, builtin, three, 3};
    oom_loop("t.yaml",
             "arch: testchip\ntiles: 4\ntile: {sram: 1 MiB}\nlabel: x\nunits: [a, b, c]\nexchange.lanes: [1, 2]\n",
             &o, false);
    oom_loop(fixture("derived2.yaml"), NULL, &opts, true);
}
END_TEST

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, full_nested);
    tcase_add_test(tc, defaults);
    tcase_add_test(tc, key_by_path);
    tcase_add_test(tc, flat_keys_and_units);
    tcase_add_test(tc, flat_equals_nested);
    tcase_add_test(tc, yaml_syntax_errors);
    tcase_add_test(tc, unknown_keys);
    tcase_add_test(tc, type_errors);
    tcase_add_test(tc, structure_errors);
    tcase_add_test(tc, many_keys);
    tcase_add_test(tc, bases);
    tcase_add_test(tc, top_level_builtin);
    tcase_add_test(tc, sets);
    tcase_add_test(tc, parse_value);
    tcase_add_test(tc, dump_round_trip);
    tcase_add_test(tc, schema_print);
    tcase_add_test(tc, out_of_memory);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
