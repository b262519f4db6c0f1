/* tests/arch/wse/test_wse_energy.c — energy events: every instruction is charged the event its
 * row of arch/wse/wse_isa.def names (once per issue for a scalar op, once per element for a vector
 * op), integer multiplies as int32_mul and adds as int32_add, and every event a row names is one
 * the shipped energy tables price. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "arch/wse/wse_isa.h"
#include "configs/builtin.h"
#include "core/buf.h"
#include "core/energy.h"
#include "core/results.h"
#include "core/sim.h"
#include "tests/arch/wse/wse_test.h"

/* Run src on a 2 x 1 mesh and collect its results into r (free with ts_results_free); the first
 * word of PE 0's SRAM into *word. */
static void run_collect(const char *src, ts_results *r, int32_t *word)
{
    ts_wse_cfg c = wt_cfg(2, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, src, false, 1, 1000000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    ts_results_init(r);
    ck_assert_int_eq(ts_wse_family.collect(m, r, &err), TS_OK);
    ck_assert_int_eq(ts_wse_read_sram(m, 0, 0, 0, word, sizeof *word), 0);
    wt_free(m);
    ts_err_free(&err);
}

/* The count of event name in r, -1 if r has no such event. */
static double event(const ts_results *r, const char *name)
{
    for (size_t i = 0; i < r->nevents; i++)
        if (!strcmp(r->events[i].name, name))
            return r->events[i].count;
    return -1;
}

/* The shipped tables price every event of r. */
static void priced_by_shipped_tables(ts_results *r)
{
    static const char *const tables[] = {"horowitz45", "jouppi7"};
    for (size_t k = 0; k < sizeof tables / sizeof tables[0]; k++) {
        ts_err e;
        ts_err_init(&e);
        ts_energy_table *t = NULL;
        ck_assert_int_eq(ts_energy_load(&t, tables[k], ts_builtin_find, &e), TS_OK);
        ck_assert_msg(ts_results_price(r, t, &e) == TS_OK, "%s: %s", tables[k], e.msg);
        ck_assert_double_gt(r->energy_j, 0);
        ts_energy_destroy(t);
        ts_err_free(&e);
    }
}

/* Ten turns of a loop of two muls, an add and an addi: the .def charges mul as int32_mul and add,
 * addi (and sub) as int32_add, once per issue; the product goes to SRAM so the loop is checked
 * to have run. With horowitz45 the compute energy is 20 x 3.1 pJ + 20 x 0.1 pJ. */
START_TEST(int_mul_and_add)
{
    ck_assert_str_eq(ts_wse_opfacts[WSE_OP_MUL].energy, "int32_mul");
    ck_assert_str_eq(ts_wse_opfacts[WSE_OP_ADD].energy, "int32_add");
    ck_assert_str_eq(ts_wse_opfacts[WSE_OP_ADDI].energy, "int32_add");
    ck_assert_str_eq(ts_wse_opfacts[WSE_OP_SUB].energy, "int32_add");
    static const char src[] = ".arch wse\n"
                              ".stream pe 0\n"
                              "    li r1, 3\n"
                              "    li r2, 5\n"
                              "    li r4, 10\n"
                              "    li r5, 0\n"
                              "l:  mul r3, r1, r2\n"
                              "    mul r3, r3, r2\n"
                              "    add r5, r5, r3\n"
                              "    addi r4, r4, -1\n"
                              "    bnz r4, l\n"
                              "    st r5, r4, 0\n";
    ts_results r;
    int32_t sum = 0;
    run_collect(src, &r, &sum);
    ck_assert_int_eq(sum, 10 * 3 * 5 * 5);
    ck_assert_double_eq(event(&r, "int32_mul"), 20);
    ck_assert_double_eq(event(&r, "int32_add"), 20);
    ck_assert_double_eq(event(&r, "insn_issue"), 4 + 5 * 10 + 1 + 1); /* and the implicit exit */
    for (int op = 0; op < WSE_OP_COUNT; op++)
        if (ts_wse_opfacts[op].energy && strncmp(ts_wse_opfacts[op].energy, "int32_", 6))
            ck_assert_double_eq(event(&r, ts_wse_opfacts[op].energy), 0);
    ck_assert_double_eq(r.flops, 0);
    ts_err e;
    ts_err_init(&e);
    ts_energy_table *t = NULL;
    ck_assert_int_eq(ts_energy_load(&t, "horowitz45", ts_builtin_find, &e), TS_OK);
    ck_assert_int_eq(ts_results_price(&r, t, &e), TS_OK);
    double compute = -1;
    for (size_t i = 0; i < r.ncomponents; i++)
        if (!strcmp(r.by_component[i].name, "compute"))
            compute = r.by_component[i].joules;
    ck_assert_double_eq_tol(compute, 20 * 3.1e-12 + 20 * 0.1e-12, 1e-20);
    ts_energy_destroy(t);
    ts_err_free(&e);
    ts_results_free(&r);
}
END_TEST

/* One program that executes every op whose row names an energy event (scalar ones once, vector
 * ones over N elements of memory), written from the .def: each event a row names is in the run's
 * results, counted once per issue or element of the rows naming it, and the flops and MACs follow
 * the rows' units and element operations. A row of another unit naming an event fails here until
 * this test learns to run it. */
enum { N = 16 };
START_TEST(every_def_event_charged)
{
    ts_buf src = {0};
    ts_buf_puts(&src, ".arch wse\n.stream pe 0\n    li r2, 1\n    dsdm 0, 0, 16, 1\n"
                      "    dsdm 1, 1024, 16, 1\n    dsdm 2, 2048, 16, 1\n");
    const char *names[WSE_EV_ROWS];
    uint8_t ev_of[WSE_EV_ROWS];
    size_t nev = ts_wse_events(names, ev_of);
    double want[WSE_EV_ROWS] = {0};
    double flops = 0, macs = 0;
    for (int op = 0; op < WSE_OP_COUNT; op++) {
        const wse_opfacts *f = &ts_wse_opfacts[op];
        const ts_opinfo *o = &ts_wse_isa.ops[op];
        if (!f->energy)
            continue;
        ck_assert_msg(f->unit == WSE_U_ALU || f->unit == WSE_U_FPU || f->unit == WSE_U_VEC,
                      "'%s' names energy event %s but this test runs only ALU, FPU and vector ops", o->mnemonic,
                      f->energy);
        ck_assert_uint_lt(f->ev, WSE_EV_ROWS);
        int nd = ts_isa_nopnds(o), dsd = 0;
        ts_buf_printf(&src, "    %s", o->mnemonic);
        for (int j = 0; j < nd; j++) {
            const char *sep = j ? ", " : " ";
            switch (o->opnd[j] & TS_OK_KIND_MASK) {
            case TS_OK_REG: ts_buf_printf(&src, "%sr%d", sep, o->opnd[j] & TS_OR_WRITE ? 3 : 2); break;
            case TS_OK_FIMM: ts_buf_printf(&src, "%s1.5", sep); break;
            case TS_OK_IMM: /* a vector op's DSDs, then its thread and done task */
                if (f->unit == WSE_U_VEC)
                    ts_buf_printf(&src, "%s%d", sep, j >= nd - 2 ? -1 : dsd++);
                else
                    ts_buf_printf(&src, "%s1", sep);
                break;
            default: ck_abort_msg("'%s': no operand for this test", o->mnemonic);
            }
        }
        ts_buf_puts(&src, "\n");
        double k = f->unit == WSE_U_VEC ? N : 1;
        want[ev_of[f->ev]] += k;
        if (f->unit == WSE_U_VEC && f->vop == WSE_V_MAC) {
            flops += 2 * k;
            macs += k;
        } else if (f->unit != WSE_U_ALU) {
            flops += k;
        }
    }
    ts_results r;
    int32_t word = 0;
    run_collect(ts_buf_str(&src), &r, &word);
    for (size_t e = 0; e < nev; e++) {
        ck_assert_msg(event(&r, names[e]) >= 0, "event %s of the .def is not in the results", names[e]);
        ck_assert_msg(event(&r, names[e]) == want[e], "event %s: %g, the .def says %g", names[e],
                      event(&r, names[e]), want[e]);
    }
    ck_assert_double_eq(r.flops, flops);
    ck_assert_double_eq((double)r.macs, macs);
    priced_by_shipped_tables(&r);
    ts_results_free(&r);
    ts_buf_free(&src);
}
END_TEST

/* The .def's events, each once in the order of first naming, and each counter slot's event. */
START_TEST(events_from_def)
{
    const char *names[WSE_EV_ROWS];
    uint8_t ev_of[WSE_EV_ROWS];
    size_t nev = ts_wse_events(names, ev_of);
    ck_assert_uint_gt(nev, 0);
    ck_assert_uint_le(nev, WSE_EV_ROWS);
    size_t rows = 0;
    for (int op = 0; op < WSE_OP_COUNT; op++) {
        const wse_opfacts *f = &ts_wse_opfacts[op];
        ck_assert_ptr_eq(f->energy, ts_wse_isa.ops[op].energy);
        if (!f->energy) {
            ck_assert_uint_eq(f->ev, WSE_EV_ROWS);
            ck_assert_uint_eq(f->ev_issue, WSE_EV_ROWS);
            continue;
        }
        ck_assert_uint_eq(f->ev, rows++); /* slots in .def order */
        ck_assert_uint_eq(f->ev_issue, f->unit == WSE_U_VEC ? WSE_EV_ROWS : f->ev);
        ck_assert_uint_lt(ev_of[f->ev], nev);
        ck_assert_str_eq(names[ev_of[f->ev]], f->energy);
    }
    ck_assert_uint_eq(rows, WSE_EV_ROWS);
    for (size_t i = 0; i < nev; i++)
        for (size_t j = i + 1; j < nev; j++)
            ck_assert_str_ne(names[i], names[j]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wse_energy");
    TCase *tc = tcase_create("energy");
    tcase_add_test(tc, events_from_def);
    tcase_add_test(tc, int_mul_and_add);
    tcase_add_test(tc, every_def_event_charged);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *r = srunner_create(suite());
    srunner_run_all(r, CK_NORMAL);
    int failed = srunner_ntests_failed(r);
    srunner_free(r);
    return failed ? 1 : 0;
}
