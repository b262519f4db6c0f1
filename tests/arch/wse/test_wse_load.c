/* tests/arch/wse/test_wse_load.c — the loader's verdicts: a program the loader rejects (an operand
 * out of range, a route off the mesh, a link the neighbour does not take, an image with no code) is
 * bad input (TS_EINPUT, which the CLI exits 2 for) naming the PE, also through the run loop the
 * kernel drives; a program that goes wrong while it runs is a simulation error (TS_ESIM, exit 1)
 * naming the PE and the cycle. */
#include <check.h>
#include <string.h>

#include "core/buf.h"
#include "tests/arch/wse/wse_test.h"

/* Load src on a 2 x 1 mesh: it must fail with status want, message msg, at PE tile. */
static void expect_fail(const char *src, ts_status want, const char *msg, int64_t tile)
{
    ts_wse_cfg c = wt_cfg(2, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, src, false, 1, 1000, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.msg, msg);
    ck_assert_int_eq(st, want);
    ck_assert_int_eq(err.status, want);
    ck_assert_int_eq(err.tile, tile);
    ts_err_free(&err);
}

START_TEST(operand_errors_are_bad_input)
{
    expect_fail(".arch wse\n.stream pe 0\n    dsdm 0, 0, 65536, 1\n", TS_EINPUT,
                "PE (0, 0) pc 0: dsd length is outside 0..65535", 0);
    expect_fail(".arch wse\n.stream pe 1\n    nop\n    dsdm 3, 0, -1, 1\n", TS_EINPUT,
                "PE (1, 0) pc 1: dsd length is outside 0..65535", 1);
    expect_fail(".arch wse\n.stream pe 0\n    dsdm 16, 0, 4, 1\n", TS_EINPUT, "PE (0, 0) pc 0: dsd register is outside 0..15",
                0);
    expect_fail(".arch wse\n.stream pe 0\n    wait 0\n", TS_EINPUT, "PE (0, 0) pc 0: wait needs at least 1 cycle", 0);
    expect_fail(".arch wse\n.stream pe 0\n    send 3, r0\n", TS_EINPUT,
                "PE (0, 0) pc 0: sends on colour 3, but no route of that colour takes wavelets from the ramp", 0);
}
END_TEST

START_TEST(route_and_image_errors_are_bad_input)
{
    expect_fail(".arch wse\n.stream pe 1\n    route 0, 16, 4\n", TS_EINPUT,
                "PE (1, 0) pc 0: colour 0 is routed E, off the mesh", 1);
    expect_fail(".arch wse\n.stream pe 0\n    route 0, 16, 4\n.stream pe 1\n    route 0, 4, 16\n", TS_EINPUT,
                "PE (0, 0) routes colour 0 E, but PE (1, 0) takes no colour 0 from the W", 0);
    expect_fail(".arch wse\n.stream pe 0\n    nop\n    route 0, 16, 4\n", TS_EINPUT,
                "PE (0, 0) pc 1: 'route' configures the PE at load and must come before the first executable "
                "instruction",
                0);
    expect_fail(".arch wse\n.stream pe 0\n    image 1\n", TS_EINPUT, "PE (0, 0) pc 0: its image has no stream", 0);
}
END_TEST

START_TEST(run_time_errors_are_simulation_errors)
{
    ts_wse_cfg c = wt_cfg(2, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, ".arch wse\n.stream pe 1\n    li r1, 65536\n    dsdlen 0, r1\n", false, 1, 1000, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(st, TS_ESIM);
    ck_assert_int_eq(err.status, TS_ESIM);
    ck_assert_str_eq(err.msg, "PE (1, 0): dsdlen at pc 1: length 65536 is outside 0..65535");
    ck_assert_int_eq(err.tile, 1);
    ck_assert_int_eq(err.cycle, 1);
    ts_err_free(&err);
}
END_TEST

/* Through the loop the kernel drives (config, assembly, create, load, step): the status is what
 * the CLI turns into its exit code. */
START_TEST(statuses_through_the_run_loop)
{
    const char *y = "arch: wse\nname: t2\nmesh: {width: 2, height: 1}\n";
    ts_buf out = {0};
    ck_assert_int_eq(wt_report(y, ".arch wse\n.stream pe 0\n    dsdm 0, 0, 70000, 1\n", false, 1, &out), TS_EINPUT);
    ck_assert_str_eq(ts_buf_str(&out), "tile 0: PE (0, 0) pc 0: dsd length is outside 0..65535");
    ts_buf_free(&out);
    out = (ts_buf){0};
    ck_assert_int_eq(wt_report(y, ".arch wse\n.stream pe 0\n    li r1, 70000\n    dsdlen 0, r1\n", true, 1, &out),
                     TS_ESIM);
    ck_assert_str_eq(ts_buf_str(&out), "tile 0, cycle 1: PE (0, 0): dsdlen at pc 1: length 70000 is outside 0..65535");
    ts_buf_free(&out);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wse_load");
    TCase *tc = tcase_create("load");
    tcase_add_test(tc, operand_errors_are_bad_input);
    tcase_add_test(tc, route_and_image_errors_are_bad_input);
    tcase_add_test(tc, run_time_errors_are_simulation_errors);
    tcase_add_test(tc, statuses_through_the_run_loop);
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
