/* tests/arch/tsp/test_tsp_hazards.c — no interlocks, so schedule violations are errors (research
 * §2.5): each kind is produced by a small program on tsp_small and must stop the run with a
 * message naming cycle, superlane, slice, stream and the two instructions, identically fast and
 * in lockstep; with --warn (opts.warn) they are recorded and the run goes on.
 *
 * tsp_small positions: MEM W0 5, VXM 6, MEM E0 7. Queues: MEM W0 0, MEM E0 4, VXM ALUs 8... */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/config.h"
#include "core/stats.h"
#include "tests/arch/tsp/tsp_test.h"

#define SMALL "tsp_small"

/* Run text in every mode; each must fail with the same message, which is returned. */
static const char *fails(const char *text)
{
    static char msg[1400];
    ts_program *p = tsp_test_asm(text);
    tsp_run a;
    tsp_test_modes(SMALL, NULL, p, false, &a);
    ck_assert_int_eq(a.rc, TS_ESIM);
    snprintf(msg, sizeof msg, "%s", tsp_errmsg(&a));
    tsp_run_free(&a);
    ts_program_destroy(p);
    return msg;
}

/* Run text with warn in every mode: success, identical reports; returns the fast run. */
static void warns(const char *text, tsp_run *out)
{
    ts_program *p = tsp_test_asm(text);
    tsp_test_modes(SMALL, NULL, p, true, out);
    ck_assert_msg(out->rc == TS_OK, "warn run: %s", tsp_errmsg(out));
    ts_program_destroy(p);
}

#define HAS(msg, s) ck_assert_msg(strstr(msg, s) != NULL, "'%s' not in: %s", s, msg)

/* Two VXM ALUs put results on s3e at the VXM in the same cycle (3). */
static const char collision[] =
    ".arch tsp\n"
    ".stream queue 0\n  read 0, s0e, 0\n"
    ".stream queue 8\n  nop 2\n  neg i8, s3e, s0e, 0, 0\n"
    ".stream queue 9\n  nop 2\n  relu i8, s3e, s0e, 0, 0\n";

START_TEST(stream_collision)
{
    const char *m = fails(collision);
    HAS(m, "stream collision");
    HAS(m, "cycle 3, superlane 0, VXM, stream s3e");
    HAS(m, "queue 8 pc 1 'neg' (line 6) and queue 9 pc 1 'relu' (line 9)");
    tsp_run r;
    warns(collision, &r);
    ck_assert_double_eq(tsp_stat(&r, "hazards.stream_collision"), 2); /* one per superlane */
    ck_assert_uint_eq(r.r.cycles, 5);
    /* the first recorded row: cycle, kind, superlane, slice, stream, queue/pc of both */
    const ts_stat *t = ts_stats_find(r.r.stats, "hazards");
    ck_assert_ptr_nonnull(t);
    ck_assert_uint_eq(t->nrows, 2);
    const double want[9] = {3, 0, 0, 6, 3, 8, 1, 9, 1};
    for (int i = 0; i < 9; i++)
        ck_assert_double_eq(t->rows[i], want[i]);
    ck_assert_double_eq(t->rows[9 + 2], 1); /* the second row: superlane 1 */
    tsp_run_free(&r);
}
END_TEST

START_TEST(no_value_empty_register)
{
    const char *m = fails(".arch tsp\n.stream queue 4\n  nop 2\n  write 0, s5e, 0\n");
    HAS(m, "no value");
    HAS(m, "nothing was ever written there");
    HAS(m, "cycle 2, superlane 0, MEM E0, stream s5e: none and queue 4 pc 1 'write'");
}
END_TEST

/* The value passes the VXM at cycle 2; an add one cycle late finds it gone. */
START_TEST(no_value_one_cycle_late)
{
    const char *m = fails(".arch tsp\n.stream queue 0\n  read 0, s0e, 0\n"
                          ".stream queue 8\n  nop 3\n  neg i8, s1e, s0e, 0, 0\n");
    HAS(m, "no value");
    HAS(m, "cycle 3, superlane 0, VXM, stream s0e");
    HAS(m, "queue 8 pc 1 'neg'");
}
END_TEST

/* The value is there but carries another producer's tag (3, the reader expects 4). */
START_TEST(no_value_wrong_tag)
{
    const char *m = fails(".arch tsp\n.stream queue 0\n  read 0, s0e, 3\n"
                          ".stream queue 8\n  nop 2\n  neg i8, s1e, s0e, 4, 0\n");
    HAS(m, "tagged 3, the reader expects tag 4");
    HAS(m, "cycle 2, superlane 0, VXM, stream s0e: queue 0 pc 0 'read' (line 3) and queue 8 pc 1 'neg' (line 6)");
}
END_TEST

/* Chaining too early: ALU 1 reads ALU 0's latch in the cycle ALU 0 issues. */
START_TEST(no_value_latch_not_ready)
{
    const char *m = fails(".arch tsp\n.stream queue 0\n  read 0, s0e, 0\n"
                          ".stream queue 8\n  nop 2\n  neg i8, nul, s0e, 0, 0\n"
                          ".stream queue 9\n  nop 2\n  neg i8, s1e, alu0, 0, 0\n");
    HAS(m, "the latch holds no value yet");
    HAS(m, "cycle 2, superlane 0, VXM, stream alu0: none and queue 9 pc 1 'neg'");
}
END_TEST

/* MEM W0: read at 0; at 1 a read paired with a write (bank write at 2); a read at 2 on the same
 * bank meets the write. Words 0..1023 are bank 0 in tsp_small. */
static const char bank[] =
    ".arch tsp\n"
    ".stream queue 0\n"
    "  read 0, s0e, 0\n"
    "  read 5, s1e, 0\n"
    "  write 10, s0e, 0\n"
    "  read 20, s2e, 0\n";

START_TEST(bank_conflict)
{
    const char *m = fails(bank);
    HAS(m, "bank conflict: a read and a write on bank 0");
    HAS(m, "cycle 2, superlane 0, MEM W0, stream -: queue 0 pc 2 'write' (line 5) and queue 0 pc 3 'read' (line 6)");
    tsp_run r;
    warns(bank, &r);
    ck_assert_double_eq(tsp_stat(&r, "hazards.bank_conflict"), 2);
    tsp_run_free(&r);
    /* on the other bank the same schedule is legal: one read and one write per cycle */
    ts_program *p = tsp_test_asm(".arch tsp\n.stream queue 0\n  read 0, s0e, 0\n  read 5, s1e, 0\n"
                                 "  write 1500, s0e, 0\n  read 20, s2e, 0\n");
    tsp_test_run2(SMALL, NULL, p, &r);
    ck_assert_double_eq(tsp_stat(&r, "hazards.bank_conflict"), 0);
    /* in cycle 2 superlane 0 reads word 20 and writes word 1500 while superlane 1 reads word 5 */
    ck_assert_double_eq(tsp_stat(&r, "mem.peak_bytes_per_cycle"), 3 * 16);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* 40 instructions, a capacity of 32, no ifetch: the queue runs dry at pc 32 (cycle 32). */
START_TEST(queue_underrun)
{
    ts_buf b = TS_BUF_INIT;
    ts_buf_printf(&b, ".arch tsp\n.stream queue 0\n");
    for (int i = 0; i < 40; i++)
        ts_buf_printf(&b, "  nop 1\n");
    const char *m = fails(ts_buf_str(&b));
    HAS(m, "queue underrun");
    HAS(m, "cycle 32, superlane 0, MEM W0, stream -: none and queue 0 pc 32 'nop'");
    tsp_run r;
    warns(ts_buf_str(&b), &r);
    ck_assert_double_eq(tsp_stat(&r, "hazards.queue_underrun"), 1);
    ck_assert_uint_eq(r.r.cycles, 40);
    tsp_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

/* Refusals at load time: the wrong unit, a register past the config's streams, a bad type. */
START_TEST(load_refusals)
{
    static const struct { const char *text, *msg; } cases[] = {
        {".arch tsp\n.stream queue 8\n  read 0, s0e, 0\n", "queue 8 pc 0 (line 3): 'read': a mem instruction cannot issue from a vxm queue"},
        {".arch tsp\n.stream queue 0\n  read 0, s20e, 0\n", "operand 2 must be a stream register s0e..s15e or s0w..s15w"},
        {".arch tsp\n.stream queue 8\n  tanh i32, s0e, s4e, 0, 0\n", "it takes floating-point types only"},
        {".arch tsp\n.stream queue 8\n  add i32, s1e, s4e, s8e, 0, 0\n", "aligned group of streams"},
        {".arch tsp\n.stream queue 0\n  read 5000, s0e, 0\n", "address 5000 is past the slice's 2048 words"},
        {".arch tsp\n.stream queue 58\n  nop 1\n", "program has a stream for queue 58, but the config has 58 queues"},
        {".arch tsp\n.stream queue 0\n  repeat 2, 1\n", "repeat must follow an instruction"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ts_program *p = tsp_test_asm(cases[i].text);
        tsp_run r;
        tsp_test_run(SMALL, NULL, p, false, false, &r);
        ck_assert_int_eq(r.rc, TS_EINPUT);
        HAS(tsp_errmsg(&r), cases[i].msg);
        tsp_run_free(&r);
        ts_program_destroy(p);
    }
}
END_TEST

/* An f16 abc occupies its plane for mxm.fp16_interval (4) cycles: a second one a cycle later is a
 * resource violation. Plane W0 (position 0) installs one f16 row from s0w/s1w (MEM W0, W1) at 6;
 * x pairs on s2w/s3w (MEM W2, W3) reach it at 7 and 8. */
START_TEST(resource_fp16_abc_too_soon)
{
    const char *m = fails(".arch tsp\n"
                          ".stream queue 0\n  read 0, s0w, 0\n"
                          ".stream queue 1\n  nop 1\n  read 0, s1w, 0\n"
                          ".stream queue 2\n  nop 3\n  read 0, s2w, 0\n  read 0, s2w, 0\n"
                          ".stream queue 3\n  nop 4\n  read 0, s3w, 0\n  read 0, s3w, 0\n"
                          ".stream queue 24\n  nop 6\n  iw f16, s0w, 2, 0\n"
                          ".stream queue 25\n  nop 7\n  abc f16, s2w, 0, 0, 0\n  abc f16, s2w, 0, 0, 0\n");
    HAS(m, "mxm plane busy");
    HAS(m, "cycle 8, superlane 0, MXM W0, stream s2w: none and queue 25 pc 2 'abc'");
}
END_TEST

/* Three transposes issued together on one SXM: at most two in flight (research §1.7). */
START_TEST(resource_too_many_transposes)
{
    const char *m = fails(".arch tsp\n"
                          ".stream queue 44\n  transpose s0e, s0w, 0, 0\n"
                          ".stream queue 45\n  transpose s0e, s0w, 0, 0\n"
                          ".stream queue 46\n  transpose s0e, s0w, 0, 0\n");
    HAS(m, "sxm busy: more than 2 transposes in flight");
    HAS(m, "cycle 0, superlane 0, SXM E0, stream s0e: none and queue 46 pc 0 'transpose'");
}
END_TEST

/* Config checks: what is wrong first, with the numbers. */
static const char *config_fails(const char *set)
{
    static char msg[1400];
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/tsp_small.yaml", root ? root : ".");
    const char *sets[] = {set};
    ts_config_opts o = {.schema = ts_tsp_schema_lookup, .sets = sets, .nsets = 1};
    ts_err e;
    ts_err_init(&e);
    ts_config *c = NULL;
    ck_assert_int_eq(ts_config_load(&c, path, &o, &e), TS_EINPUT);
    ts_err_format(&e, msg, sizeof msg);
    ts_err_free(&e);
    return msg;
}

START_TEST(config_refusals)
{
    HAS(config_fails("mxm.dim=100"), "mxm.dim is 100 but the vector length (superlanes x lanes) is 32");
    HAS(config_fails("floorplan=[mxm, mem*4, sxm]"), "floorplan has 0 vxm slices, needs exactly one");
    HAS(config_fails("floorplan=[mxm, tpu, vxm]"), "floorplan item 'tpu' is not mem, vxm, mxm or sxm");
    HAS(config_fails("d_func.shift=1"), "d_func.shift is 1 cycles but must be at least 2");
    HAS(config_fails("streams.sr_map=[0, 1, 2]"), "streams.sr_map has 3 entries, the floorplan 13 slices");
}
END_TEST

/* A sync with no notify never ends: the kernel's hang detector stops the run and the family
 * says which queue waits on what. */
START_TEST(hang_names_the_parked_queue)
{
    ts_program *p = tsp_test_asm(".arch tsp\n.stream queue 3\n  nop 5\n  sync\n  nop 1\n");
    void *config = tsp_test_config(SMALL, NULL);
    for (int lock = 0; lock < 2; lock++) {
        ts_err e;
        ts_err_init(&e);
        ts_results r;
        ts_run_opts o = {.hang_cycles = 1000, .lockstep = lock};
        ck_assert_int_eq(ts_sim_run(&ts_tsp_family, config, p, &o, NULL, &r, &e), TS_ESIM);
        HAS(e.msg, "the program is hung");
        ck_assert_ptr_nonnull(e.detail);
        HAS(e.detail, "queue 3: pc 1: parked at sync since cycle 5, no notify pending");
        ts_err_free(&e);
    }
    ts_program_destroy(p);
    /* the pc named is the sync's, also when it is the first instruction */
    p = tsp_test_asm(".arch tsp\n.stream queue 2\n  sync\n  nop 1\n");
    ts_err e;
    ts_err_init(&e);
    ts_results r;
    ts_run_opts o = {.hang_cycles = 1000};
    ck_assert_int_eq(ts_sim_run(&ts_tsp_family, config, p, &o, NULL, &r, &e), TS_ESIM);
    HAS(e.detail, "queue 2: pc 0: parked at sync since cycle 0, no notify pending");
    ts_err_free(&e);
    ts_config_destroy(config);
    ts_program_destroy(p);
}
END_TEST

/* Every allocation of create, load, run and collect may fail: each failure is reported as
 * TS_ENOMEM and leaks nothing (the sanitizer build checks the leaks). */
START_TEST(allocation_failures)
{
    ts_program *p = tsp_test_asm(collision);
    ts_program *q = tsp_test_asm(".arch tsp\n.data mem 0 0\n.byte 1, 2, 3\n"
                                 ".stream queue 0\n  read 0, s0e, 1\n"
                                 ".stream queue 4\n  nop 3\n  write 5, s0e, 1\n");
    void *config = tsp_test_config(SMALL, NULL);
    const ts_program *progs[] = {p, q};
    for (int k = 0; k < 2; k++) {
        int failed = 0;
        for (long n = 1; n < 10000; n++) {
            ts_err e;
            ts_err_init(&e);
            ts_model *m = NULL;
            ts_results r;
            ts_results_init(&r);
            ts_run_opts o = {.warn = true};
            ts_alloc_fail_after(n);
            ts_status rc = ts_tsp_family.create(&m, config, &o, &e);
            if (rc == TS_OK)
                rc = ts_tsp_family.load(m, progs[k], &e);
            ts_step st = {0};
            while (rc == TS_OK && !st.done)
                rc = ts_tsp_family.step(m, st.now + 100, &st, &e);
            if (rc == TS_OK)
                rc = ts_tsp_family.collect(m, &r, &e);
            long hit = ts_alloc_failures();
            ts_alloc_fail_after(0);
            ts_tsp_family.destroy(m);
            ts_results_free(&r);
            ts_err_free(&e);
            if (!hit) {
                ck_assert_int_eq(rc, TS_OK);
                break;
            }
            ck_assert_msg(rc == TS_ENOMEM || rc == TS_OK, "allocation %ld: status %d", n, rc);
            failed += rc == TS_ENOMEM;
        }
        ck_assert_int_gt(failed, 5);
    }
    ts_config_destroy(config);
    ts_program_destroy(p);
    ts_program_destroy(q);
}
END_TEST

/* Fast mode against lockstep on random schedules full of violations (--warn): MEM reads, writes,
 * gathers and long nops, VXM ops and SXM shifts on random streams and directions, with repeats.
 * Reports (every statistic, the hazards table, the live-slot count the two modes derive
 * differently) and MEM must be identical. */
static uint32_t rnd(uint32_t *st)
{
    *st = *st * 1664525u + 1013904223u;
    return *st >> 8;
}

START_TEST(random_schedules_fast_equals_lockstep)
{
    uint32_t st = 2024u + (uint32_t)_i;
    ts_buf b = TS_BUF_INIT;
    ts_buf_printf(&b, ".arch tsp\n");
    for (int mem = 0; mem < 8; mem++) {
        ts_buf_printf(&b, ".data mem %d 0\n  .byte", mem);
        for (int l = 0; l < 64; l++) /* byte 1 of each tile word small: gather maps stay on the slice */
            ts_buf_printf(&b, "%s %u", l ? "," : "", rnd(&st) % (l % 16 == 1 ? 8 : 256));
        ts_buf_printf(&b, "\n");
    }
    for (int q = 0; q < 58; q++) {
        bool mem = q < 8, vxm = q >= 8 && q < 24, sxm = q >= 30;
        if (!mem && !vxm && !sxm)
            continue;
        if (rnd(&st) % 3 == 0)
            continue;
        ts_buf_printf(&b, ".stream queue %d\n", q);
        int n = 1 + (int)(rnd(&st) % 12);
        for (int i = 0; i < n; i++) {
            char r1[8], r2[8], r3[8];
            snprintf(r1, sizeof r1, "s%u%c", rnd(&st) % 4, rnd(&st) % 2 ? 'e' : 'w');
            snprintf(r2, sizeof r2, "s%u%c", rnd(&st) % 4, rnd(&st) % 2 ? 'e' : 'w');
            snprintf(r3, sizeof r3, "s%u%c", rnd(&st) % 4, rnd(&st) % 2 ? 'e' : 'w');
            uint32_t k = rnd(&st) % 8;
            if (k < 2) {
                ts_buf_printf(&b, "  nop %u\n", 1 + rnd(&st) % (k ? 40 : 3));
            } else if (mem) {
                uint32_t w = rnd(&st) % 2048;
                if (k < 5)
                    ts_buf_printf(&b, "  read %u, %s, 0\n", w, r1);
                else if (k < 7)
                    ts_buf_printf(&b, "  write %u, %s, 0\n", w, r1);
                else
                    ts_buf_printf(&b, "  gather %s, %s, 0, 0\n", r1, r2);
            } else if (vxm) {
                static const char *const ops[] = {"add", "adds", "sub", "mul", "neg", "relu"};
                const char *op = ops[rnd(&st) % 6];
                if (!strcmp(op, "neg") || !strcmp(op, "relu"))
                    ts_buf_printf(&b, "  %s i8, %s, %s, 0, 0\n", op, r1, k == 7 ? "alu0" : r2);
                else
                    ts_buf_printf(&b, "  %s i8, %s, %s, %s, 0, 0\n", op, r1, r2, r3);
            } else {
                ts_buf_printf(&b, "  shift %s, %s, %d, 0, 0\n", r1, r2, (int)(rnd(&st) % 9) - 4);
            }
            if (rnd(&st) % 6 == 0 && k >= 2)
                ts_buf_printf(&b, "  repeat %u, %u\n", rnd(&st) % 4, 1 + rnd(&st) % 3);
        }
    }
    ts_program *p = tsp_test_asm(ts_buf_str(&b));
    tsp_run r; /* every mode: the same report, MEM and statistics, or the same error */
    tsp_test_modes(SMALL, NULL, p, true, &r);
    if (r.rc != TS_OK) /* a gather address past the slice (from whatever value was on the map stream) */
        ck_assert_int_eq(r.rc, TS_ESIM);
    ts_program_destroy(p);
    tsp_run_free(&r);
    ts_buf_free(&b);
}
END_TEST

static Suite *hazards_suite(void)
{
    Suite *s = suite_create("tsp_hazards");
    TCase *tc = tcase_create("hazards");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, stream_collision);
    tcase_add_test(tc, no_value_empty_register);
    tcase_add_test(tc, no_value_one_cycle_late);
    tcase_add_test(tc, no_value_wrong_tag);
    tcase_add_test(tc, no_value_latch_not_ready);
    tcase_add_test(tc, bank_conflict);
    tcase_add_test(tc, queue_underrun);
    tcase_add_test(tc, load_refusals);
    tcase_add_test(tc, resource_fp16_abc_too_soon);
    tcase_add_test(tc, resource_too_many_transposes);
    tcase_add_test(tc, config_refusals);
    tcase_add_test(tc, hang_names_the_parked_queue);
    tcase_add_test(tc, allocation_failures);
    tcase_add_loop_test(tc, random_schedules_fast_equals_lockstep, 0, 40);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(hazards_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
