/* tests/arch/tsp/test_tsp_dispatch.c — every instruction reaches a case of the unit that runs it.
 * The loader refuses an instruction on a queue whose unit does not execute it, naming the queue,
 * pc, mnemonic, unit and queue kind, and an opcode past the table; so no program reaches a unit
 * step without a case for its op. Those steps still fail loudly (TS_ESIM, naming the op, queue,
 * slice and cycle) rather than doing nothing: that is checked by changing a loaded program's
 * op, which the load contract forbids and which stands for a .def row with no executor case.
 *
 * Small config (configs/tsp_small.yaml): queues MEM W0 0, VXM ALU 0 8, MXM W0 24, SXM W 30; every
 * d_skew is 0, so an instruction issued at cycle 0 steps superlane 0 at cycle 0. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/tsp/tsp_int.h"
#include "tests/arch/tsp/tsp_test.h"

#define SMALL "tsp_small"
#define HAS(msg, s) ck_assert_msg(strstr(msg, s) != NULL, "'%s' not in: %s", s, msg)

static const char *const unit_name[TSP_U_COUNT] = {"icu", "mem", "vxm", "mxm", "sxm", "c2c"};

/* One queue of each slice kind and the units its queue runs (ICU: every queue; C2C: SXM). */
static const struct {
    int queue;
    const char *kind;
    int unit, unit2;
} queues[] = {
    {0, "mem", TSP_U_MEM, -1},
    {8, "vxm", TSP_U_VXM, -1},
    {24, "mxm", TSP_U_MXM, -1},
    {30, "sxm", TSP_U_SXM, TSP_U_C2C},
};

/* Every opcode on every kind of queue whose unit does not run it: refused at load with the
 * unit check's message (operands are all zero; the unit is checked first). */
START_TEST(misplaced_ops_are_refused_at_load)
{
    int refused = 0;
    for (int op = 0; op < TSP_OP_COUNT; op++) {
        int unit = ts_tsp_opfacts[op].unit;
        const char *mn = ts_tsp_family.isa->ops[op].mnemonic;
        for (size_t i = 0; i < sizeof queues / sizeof queues[0]; i++) {
            if (unit == TSP_U_ICU || unit == queues[i].unit || unit == queues[i].unit2)
                continue;
            ts_program *p = ts_program_create("tsp");
            tsp_emit(p, queues[i].queue, mn, 0);
            tsp_run r;
            tsp_test_run(SMALL, NULL, p, false, false, &r);
            ck_assert_msg(r.rc == TS_EINPUT, "'%s' on a %s queue: %s", mn, queues[i].kind, tsp_errmsg(&r));
            char want[160];
            snprintf(want, sizeof want, "queue %d pc 0: '%s': a %s instruction cannot issue from a %s queue",
                     queues[i].queue, mn, unit_name[unit], queues[i].kind);
            ck_assert_str_eq(tsp_errmsg(&r), want);
            tsp_run_free(&r);
            ts_program_destroy(p);
            refused++;
        }
    }
    ck_assert_int_ge(refused, TSP_OP_COUNT); /* each op but the ICU's is refused on 2 or 3 kinds */
}
END_TEST

/* An opcode past the ISA table is refused at load. */
START_TEST(unknown_opcode_is_refused_at_load)
{
    ts_program *p = ts_program_create("tsp");
    ts_insn *in = ts_stream_emit(ts_program_stream(p, 0, 0), (uint16_t)TSP_OP_COUNT);
    ck_assert_ptr_nonnull(in);
    tsp_run r;
    tsp_test_run(SMALL, NULL, p, false, false, &r);
    ck_assert_int_eq(r.rc, TS_EINPUT);
    char want[80];
    snprintf(want, sizeof want, "queue 0 pc 0: opcode %d is not a tsp instruction", TSP_OP_COUNT);
    ck_assert_str_eq(tsp_errmsg(&r), want);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* Load p (one instruction on queue q), change that instruction's op to `to`, run it with --warn
 * (so operands nobody wrote are recorded, not fatal) and return the run's failure message. */
static const char *run_changed(ts_program *p, int q, const char *to, ts_status *rc)
{
    static char msg[1400];
    ts_config *config = tsp_test_config(SMALL, NULL);
    ts_run_opts o = {.warn = true, .threads = 1};
    ts_model *m = NULL;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_tsp_family.create(&m, config, &o, &err), TS_OK);
    ck_assert_msg(ts_tsp_family.load(m, p, &err) == TS_OK, "load: %s", err.msg);
    ts_stream *s = ts_program_stream(p, 0, (uint32_t)q);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_ge(ts_tsp_op(to), 0);
    s->insn[0].op = (uint16_t)ts_tsp_op(to);
    ts_step st = {0};
    *rc = TS_OK;
    for (int guard = 0; !st.done && *rc == TS_OK; guard++) {
        ck_assert_int_lt(guard, 1000);
        *rc = ts_tsp_family.step(m, st.now + 64, &st, &err);
    }
    ts_err_format(&err, msg, sizeof msg);
    ts_err_free(&err);
    ts_tsp_family.destroy(m);
    ts_config_destroy(config);
    ts_program_destroy(p);
    return msg;
}

/* Each unit's step fails loudly on an op it has no case for: TS_ESIM (exit 1 from the CLI). */
START_TEST(an_op_without_a_case_fails_loudly)
{
    static const struct {
        int q;
        const char *mn;
        int n, a[6];
        const char *to, *msg;
    } cases[] = {
        {0, "read", 3, {0, 0, 0}, "add",
         "the mem executor has no case for queue 0 pc 0 'add': MEM W0, superlane 0, cycle 0"},
        /* tanh on integers: the VXM's arithmetic has no case for it */
        {8, "neg", 5, {TSP_REG_TYPE + TSP_I8, 0, 0, 0, 0}, "tanh",
         "the vxm executor has no case for queue 8 pc 0 'tanh': VXM, superlane 0, cycle 0"},
        {24, "acc", 3, {0, 0, 0}, "read",
         "the mxm executor has no case for queue 24 pc 0 'read': MXM W0, superlane 0, cycle 0"},
        {30, "distribute", 5, {0, 1, 2, 0, 0}, "read",
         "the sxm executor has no case for queue 30 pc 0 'read': SXM W0, superlane 0, cycle 0"},
        {30, "send", 3, {0, 0, 0}, "read",
         "the c2c executor has no case for queue 30 pc 0 'read': SXM W0, superlane 0, cycle 0"},
        /* the ICU's instructions other than ifetch act at issue and never sweep the superlanes */
        {0, "ifetch", 2, {0, 0}, "read",
         "the icu executor has no case for queue 0 pc 0 'read': MEM W0, superlane 0, cycle 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_program *p = ts_program_create("tsp");
        int op = ts_tsp_op(cases[i].mn);
        ck_assert_int_ge(op, 0);
        ts_insn *in = ts_stream_emit(ts_program_stream(p, 0, (uint32_t)cases[i].q), (uint16_t)op);
        ck_assert_ptr_nonnull(in);
        for (int j = 0; j < cases[i].n; j++)
            in->a[j] = cases[i].a[j];
        ts_status rc;
        const char *msg = run_changed(p, cases[i].q, cases[i].to, &rc);
        ck_assert_msg(rc == TS_ESIM, "%s -> %s: status %d: %s", cases[i].mn, cases[i].to, (int)rc, msg);
        HAS(msg, cases[i].msg);
    }
}
END_TEST

static Suite *dispatch_suite(void)
{
    Suite *s = suite_create("tsp_dispatch");
    TCase *tc = tcase_create("dispatch");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, misplaced_ops_are_refused_at_load);
    tcase_add_test(tc, unknown_opcode_is_refused_at_load);
    tcase_add_test(tc, an_op_without_a_case_fails_loudly);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(dispatch_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
