/* tests/arch/tsp/test_tsp_units.c — one group of tests per slice kind, values and cycles checked,
 * every program run fast and in lockstep with identical reports (tsp_test_run2).
 *
 * Small config (configs/tsp_small.yaml): 2 superlanes x 16 lanes = 32-byte vectors; floorplan
 * west to east MXM W0 | SXM W | MEM W3..W0 | VXM | MEM E0..E3 | SXM E | MXM E0 at stream-register
 * positions 0..12 (VXM at 6, MEM W0 at 5, MEM E0 at 7). Queues: MEM W0..W3 = 0..3, MEM E0..E3 = 4..7, VXM ALUs 8..23,
 * MXM W0 24..26, MXM E0 27..29, SXM W 30..43, SXM E 44..57. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/arch/tsp/tsp_test.h"

#define SMALL "tsp_small"
#define VL 32

START_TEST(layout_of_small_and_v1)
{
    void *c = tsp_test_config(SMALL, NULL);
    const void *cfg = ts_config_data(c);
    ck_assert_int_eq(ts_tsp_queue_mem(cfg, 0, 0), 0);
    ck_assert_int_eq(ts_tsp_queue_mem(cfg, 1, 0), 4);
    ck_assert_int_eq(ts_tsp_queue_vxm(cfg, 0), 8);
    ck_assert_int_eq(ts_tsp_queue_mxm(cfg, 0, 0, 0), 24);
    ck_assert_int_eq(ts_tsp_queue_mxm(cfg, 1, 0, 2), 29);
    ck_assert_int_eq(ts_tsp_queue_sxm(cfg, 0, 0), 30);
    ck_assert_int_eq(ts_tsp_queue_sxm(cfg, 1, 13), 57);
    ck_assert_int_eq(ts_tsp_queue_position(cfg, 0), 5);  /* MEM W0 next to the VXM at 6 */
    ck_assert_int_eq(ts_tsp_queue_position(cfg, 4), 7);  /* MEM E0 */
    ck_assert_int_eq(ts_tsp_queue_position(cfg, 8), 6);  /* the VXM */
    ck_assert_int_eq(ts_tsp_queue_position(cfg, 24), 0); /* MXM W0 at the west edge */
    ck_assert_int_eq(ts_tsp_queue_mem(cfg, 0, 4), -1);
    ts_config_destroy(c);
    c = tsp_test_config("tsp_v1", NULL);
    cfg = ts_config_data(c);
    ts_info info;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_tsp_family.info(cfg, &info, &e), TS_OK);
    ck_assert_uint_eq(info.sram_bytes, 88ull * 2621440ull);        /* 220 MiB */
    ck_assert_double_eq(info.peak[0].macs, 409600.0);                /* research §1.1 */
    ck_assert_double_eq(info.bw[0].bytes_per_cycle, 56320.0);        /* research §1.1, §7.2 */
    ck_assert_double_eq(info.bw[1].bytes_per_cycle, 20480.0);        /* per hemisphere, research §1.1 */
    ck_assert_double_eq(info.bw[2].bytes_per_cycle, 2304.0);         /* 144 x 16 B, research §1.1 */
    ck_assert_int_eq(ts_tsp_queue_sxm(cfg, 1, 13), 143);             /* 144 queues */
    ck_assert_int_eq(ts_tsp_queue_vxm(cfg, 15), 103);
    ck_assert_int_eq(ts_tsp_queue_position(cfg, 43), 3);              /* MEM W43 next to SXM W */
    ts_config_destroy(c);
}
END_TEST

/* MEM W0 reads word 0 onto s0e at cycle 0 (superlane k at k, on the register at k + 1); it
 * reaches MEM E0 two hops east at 3 + k, where a write issued at 3 stores it at word 5. */
START_TEST(mem_read_stream_write)
{
    uint8_t v[VL];
    for (int i = 0; i < VL; i++)
        v[i] = (uint8_t)(i * 7 + 1);
    ts_program *p = ts_program_create("tsp");
    tsp_data(p, 0, 0, v, VL);
    tsp_emit(p, 0, "read", 3, 0, E(0), 7);
    tsp_emit(p, 4, "nop", 1, 3);
    tsp_emit(p, 4, "write", 3, 5, E(0), 7);
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    for (int i = 0; i < VL; i++)
        ck_assert_uint_eq(tsp_peek(&r, 4, 5 * VL + (uint64_t)i), v[i]);
    /* bank writes at 3 + 1 + k for k = 0, 1: the last lands in cycle 5 */
    ck_assert_uint_eq(r.r.cycles, 6);
    ck_assert_double_eq(tsp_stat_at(&r, "mem.bytes_read", 0), VL);
    ck_assert_double_eq(tsp_stat_at(&r, "mem.bytes_written", 4), VL);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_SRAM], 2 * VL);
    ck_assert_double_eq(tsp_event(&r, "sram_read_64b"), VL / 8.0);
    ck_assert_double_eq(tsp_event(&r, "insn_issue"), 3);
    /* the value flows east from position 5 and is still on chip when the run ends at 6:
     * superlane 0's copy (born at 1) counts 5 cycles, superlane 1's (born at 2) 4 */
    ck_assert_double_eq(tsp_stat(&r, "streams.live_slot_cycles"), 9);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_NET], 9 * 16);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

Suite *tsp_units_suite(void);
Suite *tsp_units_suite(void)
{
    Suite *s = suite_create("tsp_units");
    TCase *tc = tcase_create("units");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, layout_of_small_and_v1);
    tcase_add_test(tc, mem_read_stream_write);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(tsp_units_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
