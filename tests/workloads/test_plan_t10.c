/* tests/workloads/test_plan_t10.c — the compute-shift planner's plan space and cost model:
 * validity rules, memory and cost formulas worked by hand, the enumeration, the Pareto set, the
 * pick under a memory limit, and the load-compute-store plan in the same model. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/err.h"
#include "workloads/ipu/plan_t10.h"

/* ipu_mk1: 1216 tiles, 256 KiB, AMP 8 f32 MACs (4 units), 6 workers, 4 B/cycle, sync 90 */
static const ts_t10_hw mk1 = {.tiles = 1216, .sram_bytes = 256 * 1024, .units = 4, .workers = 6, .xbytes = 4,
                              .sync_cycles = 90, .round_cycles = 30};

START_TEST(amp_kernel_cycles)
{
    /* 6 rows, k 128, 8 columns: each worker 1 row; per group 64 pairs * 6 + 2 + 4 + 4 = 394; 2 groups */
    ck_assert_uint_eq(ts_t10_amp_cycles(&mk1, 6, 128, 8), 6 * (1 * (4 + 2 * 394) + 20));
    /* 7 rows take 2 rows on some worker: twice the row work */
    ck_assert_uint_eq(ts_t10_amp_cycles(&mk1, 7, 128, 8), 6 * (2 * (4 + 2 * 394) + 20));
    /* 5 columns take 2 AMP groups, like 8 */
    ck_assert_uint_eq(ts_t10_amp_cycles(&mk1, 6, 128, 5), ts_t10_amp_cycles(&mk1, 6, 128, 8));
}
END_TEST

START_TEST(cost_no_rotation)
{
    ts_t10_mm mm = {.m = 64, .k = 64, .n = 64, .es = 4};
    ts_t10_plan p = {.fm = 8, .fn = 4, .fk = 1, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE};
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &p, &err), TS_OK);
    ck_assert_uint_eq(p.tiles, 32);
    ck_assert_uint_eq(p.rows, 8);
    ck_assert_uint_eq(p.cols, 16);
    ck_assert_uint_eq(p.kt, 64);
    ck_assert_uint_eq(p.steps, 1);
    /* A 8x64, B 64x16, C 8x16, f32 */
    ck_assert_uint_eq(p.mem_bytes, (8 * 64 + 64 * 16 + 8 * 16) * 4);
    /* A in chunks of 16 rows (1024 elements), each row wanted by the fn = 4 tiles: one round of 16 KiB */
    ck_assert_uint_eq(p.in_cycles, 16 * 64 * 4 * 4 / 4 + 30);
    ck_assert_uint_eq(p.exchange_cycles, p.in_cycles);
    ck_assert_uint_eq(p.w_bytes, 64 * 16 * 4);
    ck_assert_uint_eq(p.syncs, 2);
    ck_assert_uint_eq(p.compute_cycles, ts_t10_amp_cycles(&mk1, 8, 64, 16));
    ck_assert_uint_eq(p.cycles, p.compute_cycles + p.exchange_cycles + 2 * 90);
    ts_err_free(&err);
}
END_TEST

START_TEST(cost_rotating_b)
{
    /* B rotates in rings of ft = 4 of the fm = 8 tiles of its columns, pace 2: 8 steps of k 8 */
    ts_t10_mm mm = {.m = 64, .k = 64, .n = 64, .es = 4};
    ts_t10_plan p = {.fm = 8, .fn = 4, .fk = 1, .ft = 4, .rp = 2, .rot = TS_T10_ROT_B};
    ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &p, NULL), TS_OK);
    ck_assert_uint_eq(p.steps, 8);
    ck_assert_uint_eq(p.kp, 8);
    /* A whole (8x64); B held 16 of k (kt / ft) plus a slice of 8 in flight, 16 columns; C 8x16 */
    ck_assert_uint_eq(p.mem_bytes, (8 * 64 + (16 + 8) * 16 + 8 * 16) * 4);
    ck_assert_uint_eq(p.shift_bytes, 8 * 16 * 4);
    ck_assert_uint_eq(p.w_bytes, (16 + 8) * 16 * 4);
    ck_assert_uint_eq(p.exchange_cycles, 4096 + 30 + 7 * (128 + 30));
    ck_assert_uint_eq(p.syncs, 16);
    ck_assert_uint_eq(p.compute_cycles, 8 * ts_t10_amp_cycles(&mk1, 8, 8, 16));
    ck_assert_uint_eq(p.cycles, p.compute_cycles + p.exchange_cycles + 16 * 90);
    /* both rotating (ft divides fm and fn): both slices shift */
    ts_t10_plan q = {.fm = 8, .fn = 4, .fk = 1, .ft = 4, .rp = 1, .rot = TS_T10_ROT_AB};
    ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &q, NULL), TS_OK);
    ck_assert_uint_eq(q.kp, 16);
    ck_assert_uint_eq(q.shift_bytes, (8 + 16) * 16 * 4);
    ck_assert_uint_eq(q.mem_bytes, ((16 + 16) * 8 + (16 + 16) * 16 + 8 * 16) * 4);
    /* a rotating A is gathered once per ring, not once per tile of the row: fn / ft = 1 copy */
    ck_assert_uint_eq(q.in_cycles, 16 * 64 * 4 / 4 + 30);
}
END_TEST

START_TEST(cost_partial_sums)
{
    /* fk = 4: two tree levels of f32 partials (8x16 words), each 128 words / 4 B */
    ts_t10_mm mm = {.m = 64, .k = 64, .n = 64, .es = 4};
    ts_t10_plan p = {.fm = 8, .fn = 4, .fk = 4, .ft = 1, .rp = 1, .rot = TS_T10_ROT_NONE};
    ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &p, NULL), TS_OK);
    ck_assert_uint_eq(p.kt, 16);
    ck_assert_uint_eq(p.syncs, 4);
    ck_assert_uint_eq(p.exchange_cycles, 4126 + 2 * (8 * 16 * 4 / 4 + 30));
    ck_assert_uint_eq(p.compute_cycles, ts_t10_amp_cycles(&mk1, 8, 16, 16) + 2 * 4 * 128);
    ck_assert_uint_eq(p.mem_bytes, (8 * 16 + 16 * 16) * 4 + 8 * 16 * 8);
}
END_TEST

START_TEST(invalid_plans)
{
    ts_t10_mm mm = {.m = 64, .k = 64, .n = 64, .es = 4};
    ts_err err;
    ts_err_init(&err);
    ts_t10_plan bad[] = {
        {.fm = 0, .fn = 1, .fk = 1, .ft = 1, .rp = 1},                     /* zero factor */
        {.fm = 64, .fn = 16, .fk = 2, .ft = 1, .rp = 1},                   /* 2048 tiles */
        {.fm = 8, .fn = 4, .fk = 1, .ft = 3, .rp = 1, .rot = TS_T10_ROT_B}, /* 3 does not divide 8 */
        {.fm = 8, .fn = 4, .fk = 1, .ft = 8, .rp = 1, .rot = TS_T10_ROT_A}, /* 8 does not divide 4 */
        {.fm = 8, .fn = 4, .fk = 1, .ft = 2, .rp = 1, .rot = TS_T10_ROT_NONE},
        {.fm = 8, .fn = 4, .fk = 1, .ft = 8, .rp = 8, .rot = TS_T10_ROT_B}, /* 64 steps, 32 pairs */
        {.fm = 65, .fn = 1, .fk = 1, .ft = 1, .rp = 1},                    /* more tiles than rows */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &bad[i], &err), TS_EINPUT);
        ck_assert_str_ne(err.msg, "");
    }
    ts_err_free(&err);
}
END_TEST

START_TEST(enumerate_and_pareto)
{
    ts_t10_mm mm = {.m = 512, .k = 768, .n = 768, .es = 4};
    ts_t10_plan *v;
    size_t n;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_t10_mm_plans(&mk1, &mm, &v, &n, &err), TS_OK);
    ck_assert_uint_gt(n, 100);
    int rot_seen = 0;
    for (size_t i = 0; i < n; i++) {
        ts_t10_plan q = v[i];
        ck_assert_uint_le(v[i].tiles, mk1.tiles);
        ck_assert_uint_le(v[i].mem_bytes, mk1.sram_bytes);
        ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &q, NULL), TS_OK); /* every plan valid, fields as derived */
        ck_assert_uint_eq(q.cycles, v[i].cycles);
        rot_seen |= 1 << v[i].rot;
    }
    ck_assert_int_eq(rot_seen, 0xf);
    /* the Pareto set of a copy in reverse order is the same */
    ts_t10_plan *r = ts_calloc(n, sizeof *r);
    ck_assert_ptr_nonnull(r);
    for (size_t i = 0; i < n; i++)
        r[i] = v[n - 1 - i];
    ts_t10_plan *all = ts_calloc(n, sizeof *all);
    ck_assert_ptr_nonnull(all);
    for (size_t i = 0; i < n; i++)
        all[i] = v[i];
    size_t np = ts_t10_pareto(v, n), nr = ts_t10_pareto(r, n);
    ck_assert_uint_eq(np, nr);
    ck_assert_uint_gt(np, 1);
    for (size_t i = 0; i < np; i++) {
        ck_assert_uint_eq(v[i].cycles, r[i].cycles);
        ck_assert_uint_eq(v[i].fm, r[i].fm);
        if (i) { /* memory up, cycles down */
            ck_assert_uint_gt(v[i].mem_bytes, v[i - 1].mem_bytes);
            ck_assert_uint_lt(v[i].cycles, v[i - 1].cycles);
        }
    }
    /* no plan dominates a Pareto plan */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < np; j++)
            ck_assert(!(all[i].mem_bytes <= v[j].mem_bytes && all[i].cycles < v[j].cycles));
    /* pick: the fastest within a limit; nothing under the smallest */
    ck_assert_ptr_eq(ts_t10_pick(v, np, UINT64_MAX), &v[np - 1]);
    ck_assert_ptr_null(ts_t10_pick(v, np, v[0].mem_bytes - 1));
    const ts_t10_plan *mid = ts_t10_pick(v, np, v[np / 2].mem_bytes);
    ck_assert_ptr_eq(mid, &v[np / 2]);
    ts_free(all);
    ts_free(r);
    ts_free(v);
    ts_err_free(&err);
}
END_TEST

START_TEST(nothing_fits)
{
    ts_t10_hw tiny = mk1;
    tiny.tiles = 4;
    tiny.sram_bytes = 1024;
    ts_t10_mm mm = {.m = 64, .k = 1024, .n = 1024, .es = 4};
    ts_t10_plan *v = (ts_t10_plan *)1;
    size_t n = 7;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_t10_mm_plans(&tiny, &mm, &v, &n, &err), TS_EINPUT);
    ck_assert_ptr_null(v);
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_nonnull(strstr(err.msg, "no plan of MatMul 64x1024x1024"));
    ts_err_free(&err);
}
END_TEST

START_TEST(lcs_plan)
{
    /* matmul m=1216,k=128,n=128 on mk1: a row per tile, all columns (weights 64 KiB = a quarter) */
    ts_t10_mm mm = {.m = 1216, .k = 128, .n = 128, .es = 4};
    ts_t10_plan p;
    ts_t10_mm_lcs(&mk1, &mm, &p);
    ck_assert_uint_eq(p.tiles, 1216);
    ck_assert_uint_eq(p.fn, 1);
    ck_assert_uint_eq(p.rows, 1);
    ck_assert_uint_eq(p.compute_cycles, ts_t10_amp_cycles(&mk1, 1, 128, 128));
    /* A in chunks of 8 rows (1024 elements): a holder sends 4 KiB, 1024 cycles */
    ck_assert_uint_eq(p.exchange_cycles, 1024 + 30);
    /* 256x256x256: weights 256 KiB split into 4 column blocks of 64 */
    ts_t10_mm m2 = {.m = 256, .k = 256, .n = 256, .es = 4};
    ts_t10_mm_lcs(&mk1, &m2, &p);
    ck_assert_uint_eq(p.fn, 4);
    ck_assert_uint_eq(p.cols, 64);
    ck_assert_uint_eq(p.tiles, 1024);
    /* 512x768x768: 64 column blocks of 12 columns, 19 row groups of 27 rows gathered from chunks of
     * 2 rows, each sent 64 times in a round: the senders' ports dominate (the lowering measures
     * 1,380,000 exchange cycles for it, docs/lowering-ipu.md) */
    ts_t10_mm m3 = {.m = 512, .k = 768, .n = 768, .es = 4};
    ts_t10_mm_lcs(&mk1, &m3, &p);
    ck_assert_uint_eq(p.fn, 64);
    ck_assert_uint_eq(p.rows, 27);
    ck_assert_uint_eq(p.exchange_cycles, 15 * (2 * 768 * 4 * 64 / 4 + 30));
}
END_TEST

START_TEST(reconcile_memory)
{
    /* op 0: weights 100 / 60 / 20 bytes for 10 / 20 / 40 cycles; op 1: 80 / 40 for 10 / 100;
     * dynamic memory 10 each */
    ts_t10_plan a[3] = {{.mem_bytes = 30, .w_bytes = 20, .cycles = 40}, {.mem_bytes = 70, .w_bytes = 60, .cycles = 20},
                        {.mem_bytes = 110, .w_bytes = 100, .cycles = 10}};
    ts_t10_plan b[2] = {{.mem_bytes = 50, .w_bytes = 40, .cycles = 100}, {.mem_bytes = 90, .w_bytes = 80, .cycles = 10}};
    const ts_t10_plan *sets[2] = {a, b};
    size_t ns[2] = {3, 2}, pick[2];
    uint64_t total;
    ts_err err;
    ts_err_init(&err);
    ck_assert_int_eq(ts_t10_reconcile(sets, ns, 2, 1000, pick, &total, &err), TS_OK);
    ck_assert_uint_eq(pick[0], 2);
    ck_assert_uint_eq(pick[1], 1);
    ck_assert_uint_eq(total, 190);
    /* 150: op 0 gives 40 bytes for 10 cycles (0.25 a byte), op 1 40 for 90: op 0 moves */
    ck_assert_int_eq(ts_t10_reconcile(sets, ns, 2, 150, pick, &total, &err), TS_OK);
    ck_assert_uint_eq(pick[0], 1);
    ck_assert_uint_eq(pick[1], 1);
    ck_assert_uint_eq(total, 150);
    /* 100: op 0 again (20 cycles for 40 bytes), then op 1 (90 for 40) */
    ck_assert_int_eq(ts_t10_reconcile(sets, ns, 2, 100, pick, &total, &err), TS_OK);
    ck_assert_uint_eq(pick[0], 0);
    ck_assert_uint_eq(pick[1], 0);
    ck_assert_uint_eq(total, 70);
    ck_assert_int_eq(ts_t10_reconcile(sets, ns, 2, 69, pick, &total, &err), TS_EINPUT);
    ck_assert_ptr_nonnull(strstr(err.msg, "need 70 bytes"));
    ts_err_free(&err);
}
END_TEST

START_TEST(reconcile_capped_choice)
{
    /* two operators alike: weights 5 / 10 / 50 bytes with 90 / 50 / 10 besides, 40 / 20 / 10 cycles.
     * Budget 80: the fastest pair takes 100 + 10; either operator's next plan alone takes 60 + 50 and
     * its smallest 55 + 90, neither less, so the trade stops; the smallest of both, 10 + 90, does not
     * fit either. The middle plans of both, 20 + 50, do: the trade with the other part capped finds
     * them (as if each took 60 besides its weights: 12/16 of the budget, the first cap that fits). */
    ts_t10_plan a[3] = {{.mem_bytes = 95, .w_bytes = 5, .cycles = 40},
                        {.mem_bytes = 60, .w_bytes = 10, .cycles = 20},
                        {.mem_bytes = 60, .w_bytes = 50, .cycles = 10}};
    ts_t10_plan b[3];
    memcpy(b, a, sizeof a);
    const ts_t10_plan *sets[2] = {a, b};
    ts_t10_plan *all[2] = {a, b};
    size_t ns[2] = {3, 3}, pick[2];
    uint64_t total = 0;
    ck_assert_int_eq(ts_t10_reconcile(sets, ns, 2, 80, pick, &total, NULL), TS_EINPUT);
    ts_t10_plan chosen[2];
    ck_assert(ts_t10_reconcile_capped(all, ns, 2, 80, chosen, &total));
    for (int k = 0; k < 2; k++) {
        ck_assert_uint_eq(chosen[k].w_bytes, 10);
        ck_assert_uint_eq(chosen[k].mem_bytes, 60); /* the plan as it is, not as traded */
        ck_assert_uint_eq(chosen[k].cycles, 20);
    }
    ck_assert_uint_eq(total, 80); /* 20 of weights and the cap, 60 */
    /* the sets are left as they were */
    ck_assert_uint_eq(a[2].mem_bytes, 60);
    ck_assert_uint_eq(b[0].mem_bytes, 95);
    /* 50: no cap leaves a choice that fits */
    ck_assert(!ts_t10_reconcile_capped(all, ns, 2, 50, chosen, &total));
}
END_TEST

START_TEST(conv_as_matmul)
{
    ts_t10_mm mm = ts_t10_conv_as_mm(64, 56, 56, 64, 3, 3, 4);
    ck_assert_uint_eq(mm.m, 3136);
    ck_assert_uint_eq(mm.k, 576);
    ck_assert_uint_eq(mm.n, 64);
    ck_assert_uint_eq(mm.es, 4);
}
END_TEST

START_TEST(pace_trades_memory_for_syncs)
{
    ts_t10_mm mm = {.m = 512, .k = 768, .n = 768, .es = 4};
    ts_t10_plan prev = {0};
    for (uint32_t rp = 1; rp <= 8; rp *= 2) {
        ts_t10_plan p = {.fm = 16, .fn = 8, .fk = 1, .ft = 8, .rp = rp, .rot = TS_T10_ROT_AB};
        ck_assert_int_eq(ts_t10_mm_cost(&mk1, &mm, &p, NULL), TS_OK);
        if (rp > 1) {
            ck_assert_uint_lt(p.mem_bytes, prev.mem_bytes);
            ck_assert_uint_gt(p.syncs, prev.syncs);
            ck_assert_uint_lt(p.shift_bytes, prev.shift_bytes);
        }
        prev = p;
    }
}
END_TEST

/* The claims of docs/lowering-ipu.md's table, in the model: the chosen compute-shift plan is faster
 * than load-compute-store, and where that is exchange-bound its exchange share is lower. */
START_TEST(model_direction)
{
    const ts_t10_mm shapes[] = {{512, 768, 768, 4, false}, {128, 768, 768, 4, false}, {128, 768, 3072, 4, false}, {1216, 128, 128, 4, false}};
    for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
        ts_t10_plan *v, l;
        size_t n;
        ck_assert_int_eq(ts_t10_mm_plans(&mk1, &shapes[i], &v, &n, NULL), TS_OK);
        n = ts_t10_pareto(v, n);
        ts_t10_mm_lcs(&mk1, &shapes[i], &l);
        const ts_t10_plan *t = ts_t10_pick(v, n, mk1.sram_bytes);
        ck_assert_ptr_nonnull(t);
        ck_assert_uint_lt(t->cycles, l.cycles);
        double xl = (double)l.exchange_cycles / (double)l.cycles, xt = (double)t->exchange_cycles / (double)t->cycles;
        if (xl > 0.5)
            ck_assert(xt < 0.43);
        ts_free(v);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("plan_t10");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, amp_kernel_cycles);
    tcase_add_test(tc, cost_no_rotation);
    tcase_add_test(tc, cost_rotating_b);
    tcase_add_test(tc, cost_partial_sums);
    tcase_add_test(tc, invalid_plans);
    tcase_add_test(tc, enumerate_and_pareto);
    tcase_add_test(tc, nothing_fits);
    tcase_add_test(tc, lcs_plan);
    tcase_add_test(tc, reconcile_memory);
    tcase_add_test(tc, reconcile_capped_choice);
    tcase_add_test(tc, conv_as_matmul);
    tcase_add_test(tc, pace_trades_memory_for_syncs);
    tcase_add_test(tc, model_direction);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
