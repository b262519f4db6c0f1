/* tests/test_energy.c — energy tables: the two shipped tables, the loader's errors, pricing. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/energy.h"
#include "core/results.h"

/* Every event the families charge (see docs/energy.md). */
static const char *const required[] = {
    "int8_add", "int32_add", "int8_mul", "int32_mul", "fp16_add", "fp32_add", "fp16_mul", "fp32_mul",
    "int8_mac", "fp16_mac", "fp32_mac", "sram_read_64b", "sram_write_64b", "sram_read_64b_1mb",
    "regfile_32b", "wire_bit_mm", "router_hop_32b", "dram_64b", "hbm_64b", "pcie_bit", "insn_issue",
};
#define NREQUIRED (sizeof required / sizeof required[0])

static void assert_close(double got, double want)
{
    ck_assert_msg(fabs(got - want) <= 1e-9 * fabs(want), "got %.17g, want %.17g", got, want);
}

static ts_energy_table *load_builtin(const char *name)
{
    ts_err e;
    ts_err_init(&e);
    ts_energy_table *t = NULL;
    ts_status st = ts_energy_load(&t, name, ts_builtin_find, &e);
    ck_assert_msg(st == TS_OK, "%s: %s:%d:%d: %s", name, e.file, e.line, e.col, e.msg);
    ts_err_free(&e);
    return t;
}

static double j(const ts_energy_table *t, const char *ev)
{
    const ts_energy_entry *e = ts_energy_find(t, ev);
    ck_assert_msg(e != NULL, "no entry %s", ev);
    return e->joules;
}

static void check_complete(const ts_energy_table *t)
{
    static const char *const comps[] = {"compute", "sram", "network", "offchip", "control"};
    for (size_t i = 0; i < NREQUIRED; i++) {
        const ts_energy_entry *e = ts_energy_find(t, required[i]);
        ck_assert_msg(e != NULL, "table %s has no %s", ts_energy_name(t), required[i]);
        ck_assert_str_eq(e->name, required[i]);
        ck_assert_msg(e->joules > 0 && e->joules < 1e-8, "%s = %g J", e->name, e->joules);
        ck_assert_msg(strlen(e->source) > 10, "%s has no real source", e->name);
        ck_assert_msg(e->node[0] != 0, "%s has no node", e->name);
        bool known = false;
        for (size_t c = 0; c < 5; c++)
            known |= !strcmp(e->component, comps[c]);
        ck_assert_msg(known, "%s component %s", e->name, e->component);
        /* Derived, assumed and recalled entries must not claim confirmation. */
        if (strstr(e->source, "derived") || strstr(e->source, "assumed") || strstr(e->source, "recalled"))
            ck_assert_msg(!e->confirmed, "%s is marked confirmed but its source says otherwise", e->name);
    }
    /* A MAC is its multiply plus its accumulate, as the sources say. */
    assert_close(j(t, "int8_mac"), j(t, "int8_mul") + j(t, "int32_add"));
    assert_close(j(t, "fp16_mac"), j(t, "fp16_mul") + j(t, "fp32_add"));
    assert_close(j(t, "fp32_mac"), j(t, "fp32_mul") + j(t, "fp32_add"));
    /* Component of the families' main events. */
    ck_assert_str_eq(ts_energy_find(t, "fp16_mac")->component, "compute");
    ck_assert_str_eq(ts_energy_find(t, "sram_read_64b")->component, "sram");
    ck_assert_str_eq(ts_energy_find(t, "wire_bit_mm")->component, "network");
    ck_assert_str_eq(ts_energy_find(t, "router_hop_32b")->component, "network");
    ck_assert_str_eq(ts_energy_find(t, "dram_64b")->component, "offchip");
    ck_assert_str_eq(ts_energy_find(t, "pcie_bit")->component, "offchip");
    ck_assert_str_eq(ts_energy_find(t, "insn_issue")->component, "control");
    ck_assert(!ts_energy_find(t, "sram_write_64b")->confirmed);
    ck_assert(!ts_energy_find(t, "pcie_bit")->confirmed);
    ck_assert(!ts_energy_find(t, "insn_issue")->confirmed);
    ck_assert(!ts_energy_find(t, "router_hop_32b")->confirmed);
    ck_assert(strstr(ts_energy_find(t, "fp16_mac")->source, "derived: fp16_mul + fp32_add") != NULL);
    ck_assert_int_eq(ts_energy_find(t, "sram_read_64b")->bits, 64);
    ck_assert_int_eq(ts_energy_find(t, "fp32_mul")->bits, 32);
    /* Entries come back in file order, and at() agrees with find(). */
    for (size_t i = 0; i < ts_energy_count(t); i++)
        ck_assert_ptr_eq(ts_energy_find(t, ts_energy_at(t, i)->name), ts_energy_at(t, i));
    ck_assert_str_eq(ts_energy_at(t, 0)->name, "int8_add");
    ck_assert_ptr_null(ts_energy_at(t, ts_energy_count(t)));
    ck_assert_ptr_null(ts_energy_find(t, "no_such_event"));
}

START_TEST(test_horowitz45)
{
    ts_energy_table *t = load_builtin("horowitz45");
    ck_assert_str_eq(ts_energy_name(t), "horowitz45");
    check_complete(t);
    /* Horowitz ISSCC 2014, 45 nm. */
    assert_close(j(t, "fp32_mul"), 3.7e-12);
    assert_close(j(t, "fp32_add"), 0.9e-12);
    assert_close(j(t, "fp16_mul"), 1.1e-12);
    assert_close(j(t, "fp16_add"), 0.4e-12);
    assert_close(j(t, "int8_add"), 0.03e-12);
    assert_close(j(t, "int32_add"), 0.1e-12);
    assert_close(j(t, "int8_mul"), 0.2e-12);
    assert_close(j(t, "int32_mul"), 3.1e-12);
    assert_close(j(t, "fp16_mac"), 2.0e-12);
    assert_close(j(t, "fp32_mac"), 4.6e-12);
    assert_close(j(t, "sram_read_64b"), 10e-12);
    assert_close(j(t, "sram_read_64b_1mb"), 100e-12);
    assert_close(j(t, "dram_64b"), 1.3e-9);
    assert_close(j(t, "wire_bit_mm"), 0.12e-12);
    assert_close(j(t, "hbm_64b"), 3.9e-12 * 64);
    ck_assert(ts_energy_find(t, "fp32_mul")->confirmed);
    ck_assert(!ts_energy_find(t, "sram_read_64b_1mb")->confirmed); /* recalled */
    ck_assert_str_eq(ts_energy_find(t, "fp32_mul")->node, "45 nm");
    ck_assert_str_eq(ts_energy_find(t, "wire_bit_mm")->node, "40 nm");
    ts_energy_destroy(t);
}
END_TEST

START_TEST(test_jouppi7)
{
    ts_energy_table *t = load_builtin("jouppi7");
    ck_assert_str_eq(ts_energy_name(t), "jouppi7");
    check_complete(t);
    /* Jouppi et al. ISCA 2021, Table 2, 7 nm. */
    assert_close(j(t, "fp32_mul"), 1.31e-12);
    assert_close(j(t, "fp32_add"), 0.38e-12);
    assert_close(j(t, "fp16_mul"), 0.34e-12);
    assert_close(j(t, "int8_mul"), 0.07e-12);
    assert_close(j(t, "int8_add"), 0.007e-12);
    assert_close(j(t, "sram_read_64b"), 7.5e-12);
    assert_close(j(t, "sram_read_64b_1mb"), 14e-12);
    assert_close(j(t, "dram_64b"), 350e-12);
    ck_assert(ts_energy_find(t, "fp32_mul")->confirmed);
    ck_assert(!ts_energy_find(t, "fp16_mul")->confirmed); /* recalled */
    ck_assert(!ts_energy_find(t, "wire_bit_mm")->confirmed);
    ck_assert_str_eq(ts_energy_find(t, "fp32_mul")->node, "7 nm");
    ts_energy_destroy(t);
}
END_TEST

/* The shipped files on disk are the ones embedded, and a path is tried before a built-in name. */
START_TEST(test_load_file_then_builtin)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    ck_assert_ptr_nonnull(root);
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/energy/horowitz45.yaml", root);
    ts_err e;
    ts_err_init(&e);
    ts_energy_table *t = NULL;
    ck_assert_int_eq(ts_energy_load(&t, path, NULL, &e), TS_OK);
    ck_assert_str_eq(ts_energy_name(t), "horowitz45");
    check_complete(t);
    ts_energy_destroy(t);

    /* A file named like a built-in wins over it. */
    char dir[] = "/tmp/ts_energy_XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/horowitz45", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("node: 5 nm\nentries:\n  x: {value: 2 fJ, component: compute, source: test}\n", f);
    fclose(f);
    ck_assert_int_eq(ts_energy_load(&t, path, ts_builtin_find, &e), TS_OK);
    ck_assert_uint_eq(ts_energy_count(t), 1);
    ck_assert_str_eq(ts_energy_name(t), "horowitz45"); /* the stem, as no name: is given */
    assert_close(ts_energy_find(t, "x")->joules, 2e-15);
    ck_assert_str_eq(ts_energy_find(t, "x")->node, "5 nm"); /* the table's node */
    ck_assert(!ts_energy_find(t, "x")->confirmed);          /* unconfirmed unless stated */
    ck_assert_int_eq(ts_energy_find(t, "x")->bits, 0);
    ts_energy_destroy(t);

    /* Errors in a file name the file. */
    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("entries:\n  x: {value: 2 fJ, component: compute}\n", f);
    fclose(f);
    ck_assert_int_eq(ts_energy_load(&t, path, ts_builtin_find, &e), TS_EINPUT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(e.file, path);
    ck_assert_int_eq(e.line, 2);
    ck_assert_int_eq(e.col, 6);
    ck_assert_str_eq(e.msg, "energy entry 'x' has no source");
    remove(path);
    rmdir(dir);

    /* Neither a file nor a built-in. */
    ck_assert_int_eq(ts_energy_load(&t, "no_such_table", ts_builtin_find, &e), TS_EINPUT);
    ck_assert_ptr_null(t);
    ck_assert_str_eq(e.msg, "energy table 'no_such_table' is neither a readable file nor a built-in table");
    ck_assert_int_eq(ts_energy_load(&t, "horowitz45", NULL, &e), TS_EINPUT);
    ts_err_free(&e);
}
END_TEST

/* Each malformed table gives file:line:col and says what is wrong. */
static void expect_error(const char *text, const char *want)
{
    ts_err e;
    ts_err_init(&e);
    ts_energy_table *t = (ts_energy_table *)1;
    ts_status st = ts_energy_load_string(&t, "bad.yaml", text, strlen(text), &e);
    ck_assert_int_eq(st, TS_EINPUT);
    ck_assert_ptr_null(t);
    char line[1200];
    ts_err_format(&e, line, sizeof line);
    ck_assert_str_eq(line, want);
    ts_err_free(&e);
}

START_TEST(test_errors)
{
    expect_error("entries:\n  a: {value: 1 pJ, component: compute, source: s, colour: red}\n",
                 "bad.yaml:2:51: unknown field 'colour' in energy entry 'a' (expected value, bits, node, "
                 "component, source or confirmed)");
    expect_error("entries:\n  a: {component: compute, source: s}\n",
                 "bad.yaml:2:6: energy entry 'a' has no value");
    expect_error("entries:\n  a:\n    value: 1 pJ\n    component: compute\n",
                 "bad.yaml:3:5: energy entry 'a' has no source");
    expect_error("entries:\n  a: {value: 1 pJ, source: s}\n",
                 "bad.yaml:2:6: energy entry 'a' has no component");
    expect_error("entries:\n  a: {value: 3.7, component: compute, source: s}\n",
                 "bad.yaml:2:14: value '3.7' of energy entry 'a' is not an energy (write it like '3.7 pJ')");
    expect_error("entries:\n  a: {value: 3.7 GHz, component: compute, source: s}\n",
                 "bad.yaml:2:14: value '3.7 GHz' of energy entry 'a' is not an energy (write it like '3.7 pJ')");
    expect_error("entries:\n  a: {value: fast J, component: compute, source: s}\n",
                 "bad.yaml:2:14: value 'fast J' of energy entry 'a' is not an energy (write it like '3.7 pJ')");
    expect_error("entries:\n  a: {value: -1 pJ, component: compute, source: s}\n",
                 "bad.yaml:2:14: value '-1 pJ' of energy entry 'a' is negative or not finite");
    expect_error("entries:\n  a: {value: 1 pJ, component: compute, source: s}\n"
                 "  a: {value: 2 pJ, component: compute, source: s}\n",
                 "bad.yaml:3:3: duplicate energy entry 'a'");
    expect_error("entries:\n  a: {value: 1 pJ, value: 2 pJ, component: compute, source: s}\n",
                 "bad.yaml:2:20: duplicate field 'value' in energy entry 'a'");
    expect_error("name: x\nentrys:\n  a: {value: 1 pJ}\n",
                 "bad.yaml:2:1: unknown key 'entrys' in energy table (expected name, node, description or "
                 "entries)");
    expect_error("name: x\nname: y\nentries: {}\n", "bad.yaml:2:1: duplicate key 'name' in energy table");
    expect_error("name: x\n", "bad.yaml:1:1: energy table has no entries");
    expect_error("", "bad.yaml:1:1: energy table is empty");
    expect_error("- a\n- b\n", "bad.yaml:1:1: energy table must be a mapping with name, node and entries");
    expect_error("entries: [a, b]\n", "bad.yaml:1:10: entries must be a mapping of event name to entry");
    expect_error("entries:\n  a: 3 pJ\n",
                 "bad.yaml:2:6: energy entry 'a' must be a mapping like {value: 3.7 pJ, ...}");
    expect_error("entries:\n  a: {value: 1 pJ, component: magic, source: s}\n",
                 "bad.yaml:2:31: unknown component 'magic' in energy entry 'a' (expected compute, sram, "
                 "network, offchip or control)");
    expect_error("entries:\n  a: {value: 1 pJ, bits: 8.5, component: compute, source: s}\n",
                 "bad.yaml:2:26: bits of energy entry 'a' must be a whole number from 1 to 65536, got '8.5'");
    expect_error("entries:\n  a: {value: 1 pJ, confirmed: yes, component: compute, source: s}\n",
                 "bad.yaml:2:31: confirmed of energy entry 'a' must be true or false, got 'yes'");
    expect_error("entries:\n  a: {value: 1 pJ, confirmed: \"true\", component: compute, source: s}\n",
                 "bad.yaml:2:31: confirmed of energy entry 'a' must be true or false, got 'true'");
    expect_error("entries:\n  a: {value: [1], component: compute, source: s}\n",
                 "bad.yaml:2:14: field 'value' of energy entry 'a' must be a scalar");
    expect_error("entries:\n  a: {value: 1 pJ, component: compute, source: \"\"}\n",
                 "bad.yaml:2:6: energy entry 'a' has no source");
    expect_error("entries:\n  a: {value: 1 pJ\n", "bad.yaml:3:1: invalid yaml: did not find expected ',' or '}'");
}
END_TEST

/* Allocation failures anywhere give TS_ENOMEM and leak nothing (checked by the sanitizer). */
START_TEST(test_alloc_failures)
{
    const char *text;
    size_t len;
    ck_assert_int_eq(ts_builtin_find("jouppi7", &text, &len), 0);
    int ok = 0;
    for (long n = 1; n < 200; n++) {
        ts_err e;
        ts_err_init(&e);
        ts_energy_table *t = NULL;
        ts_alloc_fail_after(n);
        ts_status st = ts_energy_load_string(&t, "jouppi7", text, len, &e);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (failed) {
            ck_assert_int_eq(st, TS_ENOMEM);
            ck_assert_ptr_null(t);
        } else {
            ck_assert_int_eq(st, TS_OK);
            ok++;
        }
        ts_energy_destroy(t);
        ts_err_free(&e);
    }
    ck_assert_int_gt(ok, 0); /* the loop went past the last allocation */
}
END_TEST

/* Pricing events with a table: energy = sum of count x entry + static power x time. */
START_TEST(test_price)
{
    ts_energy_table *t = load_builtin("horowitz45");
    ts_results r;
    ts_results_init(&r);
    ts_err e;
    ts_err_init(&e);
    r.cycles = 1000000;
    r.clock_hz = 1e9; /* 1 ms */
    r.static_w = 2.0;
    ck_assert_int_eq(ts_results_event(&r, "fp16_mac", 1e6, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(&r, "sram_read_64b", 2e5, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(&r, "fp16_mac", 1e6, &e), TS_OK); /* adds up */
    ck_assert_int_eq(ts_results_event(&r, "wire_bit_mm", 0.5, &e), TS_OK);
    ck_assert_int_eq(ts_results_event(&r, "dram_64b", 10, &e), TS_OK);
    ck_assert_uint_eq(r.nevents, 4);
    ck_assert_int_eq(ts_results_price(&r, t, &e), TS_OK);
    double compute = 2e6 * 2.0e-12, sram = 2e5 * 10e-12, net = 0.5 * 0.12e-12, off = 10 * 1.3e-9;
    double stat = 2.0 * 1e-3;
    assert_close(r.energy_j, compute + sram + net + off + stat);
    ck_assert_str_eq(r.energy_table, "horowitz45");
    ck_assert_uint_eq(r.ncomponents, 5);
    /* Sorted by name. */
    static const char *const names[] = {"compute", "network", "offchip", "sram", "static"};
    const double want[] = {compute, net, off, sram, stat};
    for (size_t i = 0; i < 5; i++) {
        ck_assert_str_eq(r.by_component[i].name, names[i]);
        assert_close(r.by_component[i].joules, want[i]);
    }
    /* Pricing again gives the same figures, not double. */
    ck_assert_int_eq(ts_results_price(&r, t, &e), TS_OK);
    assert_close(r.energy_j, compute + sram + net + off + stat);
    ck_assert_uint_eq(r.ncomponents, 5);

    /* An event the table does not price is an input error, and leaves the figures alone. */
    ck_assert_int_eq(ts_results_event(&r, "warp_drive", 1, &e), TS_OK);
    ck_assert_int_eq(ts_results_price(&r, t, &e), TS_EINPUT);
    ck_assert_str_eq(e.msg, "energy table 'horowitz45' has no entry for event 'warp_drive'");
    assert_close(r.energy_j, compute + sram + net + off + stat);

    /* Bad events are bugs in a family. */
    ck_assert_int_eq(ts_results_event(&r, "x", -1, &e), TS_EINTERNAL);
    ck_assert_int_eq(ts_results_event(&r, "x", NAN, &e), TS_EINTERNAL);
    ck_assert_int_eq(ts_results_event(&r, "", 1, &e), TS_EINTERNAL);
    ck_assert_int_eq(ts_results_event(&r, "a_name_that_is_far_too_long_for_the_event_field", 1, &e),
                     TS_EINTERNAL);
    ts_results_free(&r);

    /* No events, no time: only a zero static component. */
    ts_results_init(&r);
    ck_assert_int_eq(ts_results_price(&r, t, &e), TS_OK);
    ck_assert_double_eq(r.energy_j, 0);
    ck_assert_uint_eq(r.ncomponents, 1);
    ck_assert_str_eq(r.by_component[0].name, "static");
    ck_assert_double_eq(ts_results_time_s(&r), 0);
    /* Too many event kinds. */
    char name[16];
    for (int i = 0; i < TS_MAX_EVENTS; i++) {
        snprintf(name, sizeof name, "ev%d", i);
        ck_assert_int_eq(ts_results_event(&r, name, 1, &e), TS_OK);
    }
    ck_assert_int_eq(ts_results_event(&r, "one_more", 1, &e), TS_EINTERNAL);
    ck_assert_int_eq(ts_results_event(&r, "ev3", 1, &e), TS_OK); /* existing ones still add */
    ck_assert_double_eq(r.events[3].count, 2);
    /* Utilization kinds merge. */
    ck_assert_int_eq(ts_results_util(&r, "tile", 4, 100, &e), TS_OK);
    ck_assert_int_eq(ts_results_util(&r, "tile", 2, 50, &e), TS_OK);
    ck_assert_uint_eq(r.nutil, 1);
    ck_assert_uint_eq(r.util[0].units, 6);
    ck_assert_uint_eq(r.util[0].busy, 150);
    ts_results_free(&r);
    ts_results_free(&r); /* twice is harmless */
    ts_err_free(&e);
    ts_energy_destroy(t);
    ts_energy_destroy(NULL);
}
END_TEST

/* Every energy event an instruction names in a family's .def (the ENERGY column; the TSP's VXM
 * classes "add" and "mul" priced per element type; every TSP issue an insn_issue), with the row's
 * mnemonic. Only the ENERGY argument is expanded, so the rows' other columns need no header. */
typedef struct def_event {
    const char *family, *mnemonic, *event;
} def_event;

static const def_event def_events[] = {
#define IPU_OP(id, mn, ops, classes, unit, ctx, lat, energy, ecount, memrd, memwr, doc) {"ipu", mn, energy},
#include "arch/ipu/ipu_isa.def"
#undef IPU_OP
#define WSE_OP(name, mn, ops, unit, vop, dtype, width, energy, flags, doc) {"wse", mn, energy},
#include "arch/wse/wse_isa.def"
#undef WSE_OP
#define TSP_OP(id, mn, ops, classes, unit, energy, flags, doc) {"tsp", mn, energy},
#define TSP_OPL(id, mn, ops, classes, unit, def, src, energy, flags, doc) {"tsp", mn, energy},
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
};

/* Every event a .def row names is priced by every shipped energy table (configs/energy/). */
START_TEST(test_def_events_priced)
{
    static const char *const tsp_types[] = {"int8_", "int32_", "fp16_", "fp32_"};
    size_t tables = 0, checked = 0;
    for (size_t b = 0; b < ts_builtin_count(); b++) {
        if (strncmp(ts_builtin_path(b), "configs/energy/", 15))
            continue;
        ts_energy_table *t = load_builtin(ts_builtin_name(b));
        tables++;
        ck_assert_msg(ts_energy_find(t, "insn_issue") != NULL, "%s prices no insn_issue", ts_builtin_name(b));
        for (size_t i = 0; i < sizeof def_events / sizeof def_events[0]; i++) {
            const def_event *d = &def_events[i];
            if (!d->event)
                continue;
            if (!strcmp(d->family, "tsp")) { /* a VXM class, priced by the element type */
                for (size_t k = 0; k < 4; k++) {
                    char ev[40];
                    snprintf(ev, sizeof ev, "%s%s", tsp_types[k], d->event);
                    ck_assert_msg(ts_energy_find(t, ev) != NULL, "%s: tsp '%s' charges %s, which %s does not price",
                                  ts_builtin_name(b), d->mnemonic, ev, ts_builtin_name(b));
                    checked++;
                }
            } else {
                ck_assert_msg(ts_energy_find(t, d->event) != NULL, "%s '%s' charges %s, which %s does not price",
                              d->family, d->mnemonic, d->event, ts_builtin_name(b));
                checked++;
            }
        }
        ts_energy_destroy(t);
    }
    ck_assert_uint_ge(tables, 2); /* horowitz45 and jouppi7 at least */
    ck_assert_uint_gt(checked, 100);
}
END_TEST

/* Integer multiplies are charged as multiplies, not adds (int32_mul is about 31x int32_add in
 * horowitz45). */
START_TEST(test_def_mul_events)
{
    size_t muls = 0;
    for (size_t i = 0; i < sizeof def_events / sizeof def_events[0]; i++) {
        const def_event *d = &def_events[i];
        if (strcmp(d->family, "tsp") && (!strcmp(d->mnemonic, "mul") || !strcmp(d->mnemonic, "muli"))) {
            ck_assert_msg(d->event && !strcmp(d->event, "int32_mul"), "%s '%s' charges %s", d->family, d->mnemonic,
                          d->event ? d->event : "nothing");
            muls++;
        }
    }
    ck_assert_uint_eq(muls, 3); /* ipu mul, muli; wse mul */
}
END_TEST

/* The power model's scaling rules (docs/energy.md): node x V^2 for logic and SRAM, V^2 only for
 * wires, nothing for off-chip I/O, sqrt(size / 8 KB) for the 8 KB SRAM access entries; node 0 is
 * no scaling at all. */
START_TEST(test_scale_rules)
{
    ts_energy_table *t = NULL;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_energy_load(&t, "horowitz45", ts_builtin_find, &err), TS_OK);
    const ts_energy_entry *mac = ts_energy_find(t, "fp16_mac"), *rd = ts_energy_find(t, "sram_read_64b");
    const ts_energy_entry *wire = ts_energy_find(t, "wire_bit_mm"), *pcie = ts_energy_find(t, "pcie_bit");
    ck_assert_ptr_nonnull(mac);
    ck_assert_ptr_nonnull(rd);
    ck_assert_ptr_nonnull(wire);
    ck_assert_ptr_nonnull(pcie);
    ck_assert_double_eq_tol(ts_energy_scale_factor(mac, 0, 0.5, 1 << 20), 1, 1e-12);
    ck_assert_double_eq_tol(ts_energy_scale_factor(mac, 45e-9, 0, 0), 1, 1e-12);
    ck_assert_double_eq_tol(ts_energy_scale_factor(mac, 7e-9, 0.75, 0), 7.0 / 45 * (0.75 / 0.9) * (0.75 / 0.9), 1e-12);
    ck_assert_double_eq_tol(ts_energy_scale_factor(wire, 7e-9, 0.45, 0), 0.25, 1e-12);
    ck_assert_double_eq_tol(ts_energy_scale_factor(pcie, 7e-9, 0.45, 0), 1, 1e-12);
    ck_assert_double_eq_tol(ts_energy_scale_factor(rd, 45e-9, 0.9, 32768), 2, 1e-12);
    ck_assert_double_eq_tol(ts_energy_scale_factor(rd, 45e-9, 0.9, 8192.0 * 100), 10, 1e-12);
    double before = mac->joules;
    ts_energy_scale(t, 0, 0.5, 0); /* no node: unchanged */
    ck_assert(mac->joules == before);
    ts_energy_scale(t, 22.5e-9, 0.9, 0);
    ck_assert_double_eq_tol(mac->joules, before / 2, 1e-24);
    ts_energy_destroy(t);
    ts_err_free(&err);
}
END_TEST

int main(void)
{
Suite *s = suite_create("energy");
    TCase *tc = tcase_create("tables");
    tcase_add_test(tc, test_horowitz45);
    tcase_add_test(tc, test_jouppi7);
    tcase_add_test(tc, test_load_file_then_builtin);
    tcase_add_test(tc, test_errors);
    tcase_add_test(tc, test_alloc_failures);
    tcase_add_test(tc, test_price);
    tcase_add_test(tc, test_def_events_priced);
    tcase_add_test(tc, test_def_mul_events);
    tcase_add_test(tc, test_scale_rules);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
