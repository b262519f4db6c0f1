/* tests/arch/wse/test_wse_pe.c — the PE: vector ops over DSDs (values, SIMD widths, bank and
 * stride rules), tasks (data, local, control, block/unblock, completion), and a GEMV over a
 * 32 x 32 region checked bit for bit against a C reference. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "tests/arch/wse/wse_test.h"

static ts_model *run_ok(const ts_wse_cfg *c, const char *src)
{
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(c, src, false, 1, 1000000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    ts_err_free(&err);
    return m;
}

static uint64_t cycles_of(const ts_model *m)
{
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    return k.cycles;
}

/* fadds over 64 fp32 with the two sources in different bank halves runs at the SIMD width, 2 per
 * cycle (research §1.4): 3 set-up cycles + 32 + the implicit exit = 36. The core waits on the op
 * alone, so the PE is evaluated in the set-up cycles, the op's issue and the exit only: it sleeps
 * through the op's other steps, its last included (docs/wse.md, *Active set*). */
START_TEST(fadds_width_and_values)
{
    char src[2048];
    snprintf(src, sizeof src,
             ".arch wse\n.stream pe 0\n    dsdm 0, 0, 64, 1\n    dsdm 1, 1024, 64, 1\n    dsdm 2, %d, 64, 1\n"
             "    fadds 0, 1, 2, -1, -1\n", 2048 + 4);
    ts_buf prog = {0};
    ts_buf_puts(&prog, src);
    ts_buf_puts(&prog, ".data pe 0 1024\n    .f32 ");
    for (int i = 0; i < 64; i++)
        ts_buf_printf(&prog, "%s%d.5", i ? ", " : "", i);
    ts_buf_puts(&prog, "\n.data pe 0 2052\n    .f32 ");
    for (int i = 0; i < 64; i++)
        ts_buf_printf(&prog, "%s%d.25", i ? ", " : "", 100 * i);
    ts_buf_puts(&prog, "\n");
    ts_wse_cfg c = wt_cfg(1, 1);
    ts_model *m = run_ok(&c, prog.data);
    ck_assert_uint_eq(cycles_of(m), 3 + 32 + 1);
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    ck_assert_uint_eq(k.tile_cycles, 3 + 1 + 1);
    float v[64];
    ts_wse_read_sram(m, 0, 0, 0, v, sizeof v);
    for (int i = 0; i < 64; i++)
        ck_assert_float_eq(v[i], (float)i + 0.5f + (float)(100 * i) + 0.25f);
    wt_free(m);
    ts_buf_free(&prog);
}
END_TEST

/* Same op with both sources in the same bank half: half width (1 per cycle). With a destination
 * stride of 4 words (16-bit stride 8, research §1.3: width 1) also 1 per cycle. */
START_TEST(bank_and_stride_rules)
{
    ts_wse_cfg c = wt_cfg(1, 1);
    ts_model *m = run_ok(&c, ".arch wse\n.stream pe 0\n    dsdm 0, 0, 64, 1\n    dsdm 1, 1024, 64, 1\n"
                             "    dsdm 2, 2048, 64, 1\n    fadds 0, 1, 2, -1, -1\n");
    ck_assert_uint_eq(cycles_of(m), 3 + 64 + 1);
    wt_free(m);
    m = run_ok(&c, ".arch wse\n.stream pe 0\n    dsdm 0, 0, 64, 4\n    dsdm 1, 1024, 64, 1\n"
                   "    dsdm 2, 2052, 64, 1\n    fadds 0, 1, 2, -1, -1\n");
    ck_assert_uint_eq(cycles_of(m), 3 + 64 + 1);
    wt_free(m);
    /* WSE-3 widths: 4 per cycle, and the ports (32 B read, 16 B write) keep up */
    c.simd_fp32_add = 4;
    c.read_bytes = 32;
    c.write_bytes = 16;
    m = run_ok(&c, ".arch wse\n.stream pe 0\n    dsdm 0, 0, 64, 1\n    dsdm 1, 1024, 64, 1\n"
                   "    dsdm 2, 2052, 64, 1\n    fadds 0, 1, 2, -1, -1\n");
    ck_assert_uint_eq(cycles_of(m), 3 + 16 + 1);
    wt_free(m);
    /* ...but with WSE-2 ports a 4-wide add is held to 2 per cycle by the 8-byte write port */
    c.read_bytes = 16;
    c.write_bytes = 8;
    m = run_ok(&c, ".arch wse\n.stream pe 0\n    dsdm 0, 0, 64, 1\n    dsdm 1, 1024, 64, 1\n"
                   "    dsdm 2, 2052, 64, 1\n    fadds 0, 1, 2, -1, -1\n");
    ck_assert_uint_eq(cycles_of(m), 3 + 32 + 1);
    wt_free(m);
}
END_TEST

/* fmacs: d = s0 + s1 * scalar, one per cycle; fp16 fmach four per cycle, rounded to binary16. */
START_TEST(mac_fp32_fp16)
{
    ts_wse_cfg c = wt_cfg(1, 1);
    ts_model *m = run_ok(&c, ".arch wse\n.stream pe 0\n    fli r1, 0.5\n    dsdm 0, 0, 8, 1\n    dsdm 1, 64, 8, 1\n"
                             "    fmacs 0, 0, 1, r1, -1, -1\n"
                             ".data pe 0 0\n    .f32 1, 2, 3, 4, 5, 6, 7, 8\n"
                             ".data pe 0 64\n    .f32 10, 20, 30, 40, 50, 60, 70, 80\n");
    ck_assert_uint_eq(cycles_of(m), 3 + 8 + 1);
    float v[8];
    ts_wse_read_sram(m, 0, 0, 0, v, sizeof v);
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(v[i], (float)(i + 1) + (float)(10 * (i + 1)) * 0.5f);
    wt_free(m);
    /* fp16: 16 elements at 4 per cycle; 1 + 2049 * 1 is not representable: 2049 rounds to 2048 */
    m = run_ok(&c, ".arch wse\n.stream pe 0\n    fli r1, 1.0\n    dsdm 0, 0, 16, 1\n    dsdm 1, 36, 16, 1\n"
                   "    fmach 0, 0, 1, r1, -1, -1\n"
                   ".data pe 0 0\n    .f16 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1\n"
                   ".data pe 0 36\n    .f16 2048, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0.25\n");
    ck_assert_uint_eq(cycles_of(m), 3 + 4 + 1);
    uint16_t h[16];
    ts_wse_read_sram(m, 0, 0, 0, h, sizeof h);
    ck_assert_uint_eq(h[0], 0x6800); /* 2048 + 1 rounds to even: 2048 */
    ck_assert_uint_eq(h[1], 0x4200); /* 3 */
    ck_assert_uint_eq(h[15], 0x3d00); /* 1.25 */
    wt_free(m);
}
END_TEST

/* fh2s: a word of two binary16 values, each half widened to binary32 exactly (a subnormal and
 * a negative one too); a half selector other than 0 or 1 is refused at load (pe_errors). */
START_TEST(fh2s_halves)
{
    ts_wse_cfg c = wt_cfg(1, 1);
    ts_model *m = run_ok(&c, ".arch wse\n.stream pe 0\n    li r15, 0\n    ld r1, r15, 0\n    fh2s r2, r1, 0\n"
                             "    fh2s r3, r1, 1\n    st r2, r15, 8\n    st r3, r15, 12\n    ld r1, r15, 4\n"
                             "    fh2s r2, r1, 0\n    fh2s r3, r1, 1\n    st r2, r15, 16\n    st r3, r15, 20\n"
                             ".data pe 0 0\n    .f16 1.5, -2048, 0.0000001192092896, -65504\n");
    float v[4];
    ts_wse_read_sram(m, 0, 0, 8, v, sizeof v);
    ck_assert_float_eq(v[0], 1.5f);
    ck_assert_float_eq(v[1], -2048.0f);
    ck_assert_float_eq(v[2], ldexpf(1.0f, -23)); /* a subnormal binary16: 2 x 2^-24 */
    ck_assert_float_eq(v[3], -65504.0f);
    wt_free(m);
}
END_TEST

/* Data tasks: three wavelets arrive at PE 1, whose data task for colour 0 adds each payload (in
 * r0) into a counter. Local tasks: activate runs a task after the current one; block holds it;
 * an async op's completion activates a task. */
START_TEST(tasks)
{
    ts_wse_cfg c = wt_cfg(2, 1);
    ts_model *m = run_ok(&c, ".arch wse\n"
                             ".stream pe 0\n    route 0, 16, 4\n    li r1, 5\n    send 0, r1\n    li r1, 7\n    send 0, r1\n"
                             "    li r1, 30\n    send 0, r1\n"
                             ".stream pe 1\n    route 0, 8, 16\n    bind 0, t, 1\nt:  ld r1, r15, 0\n    add r1, r1, r0\n"
                             "    st r1, r15, 0\n    exit\n");
    int32_t v;
    ts_wse_read_sram(m, 1, 0, 0, &v, 4);
    ck_assert_int_eq(v, 42);
    /* the wavelets are sent in cycles 1, 3 and 5 and land at PE 1's core 2 + 1 + 1 + 2 cycles later
     * (ramp, pipeline, hop, ramp). Tasks run to completion one after another: picked in cycle 7,
     * first instruction in 8 (task start latency 1), exit in 11; the next is picked in 12
     * (13..16), the last in 17 (18..21) */
    ck_assert_uint_eq(ts_wse_arrival(m, 1, 0, 0, 0), 7);
    ck_assert_uint_eq(ts_wse_arrival(m, 1, 0, 0, 2), 11);
    ck_assert_uint_eq(cycles_of(m), 22);
    wt_free(m);

    c = wt_cfg(1, 1);
    m = run_ok(&c, ".arch wse\n.stream pe 0\n    bind 5, a, 0\n    bind 6, b, 0\n    bind 7, d, 0\n"
                   "    activate 5\n    activate 6\n    block 6\n"
                   "    dsdm 0, 64, 40, 1\n    dsdm 1, 0, 40, 1\n    fmovs 0, 1, 2, 7\n    exit\n"
                   "a:  li r1, 1\n    st r1, r0, 400\n    exit\n"
                   "b:  li r1, 1\n    st r1, r0, 404\n    exit\n"
                   "d:  li r1, 1\n    st r1, r0, 408\n    exit\n");
    int32_t f[3];
    ts_wse_read_sram(m, 0, 0, 400, f, sizeof f);
    ck_assert_int_eq(f[0], 1); /* activated */
    ck_assert_int_eq(f[1], 0); /* activated but blocked */
    ck_assert_int_eq(f[2], 1); /* activated by the async move's completion */
    wt_free(m);
}
END_TEST

/* Run src on a w x 1 mesh: it must fail with status want and message msg (whole, or a part of it
 * when part is set); the error is returned for more checks (free it). */
static ts_err run_fails(uint32_t w, const char *src, ts_status want, const char *msg, bool part)
{
    ts_wse_cfg c = wt_cfg(w, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, src, false, 1, 100000, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(st, want);
    if (part)
        ck_assert_msg(strstr(err.msg, msg) != NULL, "message '%s' lacks '%s'", err.msg, msg);
    else
        ck_assert_str_eq(err.msg, msg);
    return err;
}

START_TEST(pe_errors)
{
    ts_err err = run_fails(1, ".arch wse\n.stream pe 0\n    dsdm 0, 49148, 2, 1\n    dsdm 1, 0, 2, 1\n"
                              "    fadds 0, 1, 1, -1, -1\n", TS_ESIM,
                           "PE (0, 0): fadds at pc 2: memory dsd [49148, 49156) is outside the 49152-byte SRAM", false);
    ck_assert_int_eq(err.cycle, 2);
    ts_err_free(&err);
    err = run_fails(1, ".arch wse\n.stream pe 0\n    li r1, 6\n    ld r2, r1, 0\n", TS_ESIM,
                    "PE (0, 0): ld at pc 1: address 6 is not 4-byte aligned", false);
    ts_err_free(&err);
    err = run_fails(1, ".arch wse\n.stream pe 0\n    fadds 0, 1, 2, 9, -1\n", TS_EINPUT,
                    "PE (0, 0) pc 0: thread 9 is neither -1 (main) nor a microthread 0..7", false);
    ts_err_free(&err);
    err = run_fails(1, ".arch wse\n.stream pe 0\n    fh2s r2, r1, 2\n", TS_EINPUT,
                    "PE (0, 0) pc 0: fh2s half is neither 0 (low) nor 1 (high)", false);
    ts_err_free(&err);
}
END_TEST

/* A core that comes back to the same state at a backward branch with nothing done since loops
 * forever: the run stops on the second pass, naming the PE, the pc and the first pass's cycle
 * (core/loopmark.h), in every mode. Nested loops are found too. */
START_TEST(endless_loops)
{
    static const char spin[] = ".arch wse\n.stream pe 1\n    li r1, 3\nl:  addi r2, r1, 1\n    br l\n";
    ts_err err = run_fails(2, spin, TS_ESIM, "PE (1, 0): endless loop at pc 2: this branch comes back to the state it had at "
                                    "cycle 2 (every register the same, nothing stored, sent, received or started "
                                    "since), so it repeats forever", false);
    ck_assert_int_eq(err.tile, 1);
    ck_assert_int_eq(err.cycle, 4);
    ts_err_free(&err);
    wt_modes("arch: wse\nmesh: {width: 2, height: 1}\n", spin);
    err = run_fails(2, ".arch wse\n.stream pe 0\nout: li r1, 5\n    li r3, 0\n"
                       "in:  addi r3, r3, 1\n    addi r1, r1, -1\n    bnz r1, in\n    br out\n",
                    TS_ESIM, "endless loop at pc", true);
    ck_assert_int_lt(err.cycle, 200);
    ts_err_free(&err);
}
END_TEST

/* A core that polls memory a vector op on a microthread is still writing is not looping forever,
 * though its registers come back the same on every pass: the busy thread counts as an effect. */
START_TEST(polling_a_vector_op_is_no_endless_loop)
{
    ts_wse_cfg c = wt_cfg(1, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, ".arch wse\n.stream pe 0\n    li r1, 7\n    li r2, 796\n    st r1, r2, 0\n"
                             "    dsdm 0, 0, 200, 1\n    dsdm 1, 1024, 200, 1\n    fmovs 1, 0, 0, -1\n"
                             "    li r2, 1820\nl:  ld r3, r2, 0\n    bz r3, l\n    exit\n",
                         false, 1, 100000, &st, &err);
    ck_assert_msg(m != NULL, "%s", err.msg);
    int32_t v;
    ts_wse_read_sram(m, 0, 0, 1820, &v, sizeof v);
    ck_assert_int_eq(v, 7);
    wt_free(m);
}
END_TEST

/* GEMV y = A x, N = 128, on 32 x 32 PEs with 4 x 4 blocks: PE (x, y) holds A[4y.., 4x..] column
 * by column and x[4x..]; it forms its partial product with fmacs, then partial sums flow east
 * along the row (colours 1 and 2 alternate) with fadds over fabric operands; PE (31, y) holds
 * y[4y..4y+3]. The C reference adds in the same order, so the results match bit for bit. */
#define GP WT_GEMV_P
#define GB WT_GEMV_B

#define amat wt_gemv_a
#define xvec wt_gemv_x

START_TEST(gemv_matches_c_reference)
{
    char *src = wt_gemv_program();
    ts_wse_cfg c = wt_cfg(GP, GP);
    ts_model *m = run_ok(&c, src);
    for (int py = 0; py < GP; py++) {
        float got[GB];
        ts_wse_read_sram(m, GP - 1, (uint32_t)py, 96, got, sizeof got);
        for (int i = 0; i < GB; i++) {
            int row = py * GB + i;
            /* reference: per block column px, partial = sum_k a*x in k order; then chain */
            float acc = 0;
            for (int px = 0; px < GP; px++) {
                float part = 0;
                for (int k = 0; k < GB; k++) {
                    float p = amat(row, px * GB + k) * xvec(px * GB + k);
                    part = part + p;
                }
                acc = px == 0 ? part : part + acc;
            }
            ck_assert_msg(memcmp(&acc, &got[i], 4) == 0, "y[%d]: got %a, reference %a", row, (double)got[i], (double)acc);
        }
    }
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    ck_assert_uint_eq(k.hops, (uint64_t)GP * (GP - 1) * GB);
    free(src);
    wt_free(m);
}
END_TEST


/* Every allocation the model makes can fail: each failure is reported as TS_ENOMEM (or the run
 * still succeeds if the failed allocation was the assembler's and it reported it), and the
 * sanitizer builds check nothing leaks. */
START_TEST(allocation_failures)
{
    const char *src = ".arch wse\n"
                      ".stream pe 0\n    route 0, 16, 4\n    bind 3, d, 0\n    dsdm 0, 0, 8, 1\n    dsdout 1, 0, 8, 0\n"
                      "    fmovs 1, 0, 0, 3\n    exit\nd:  li r1, 1\n    st r1, r0, 64\n    exit\n"
                      ".stream pe 1\n    route 0, 8, 16\n    dsdin 0, 0, 8\n    dsdm 1, 0, 8, 1\n    fmovs 1, 0, -1, -1\n"
                      ".data pe 0 0\n    .f32 1, 2, 3, 4, 5, 6, 7, 8\n";
    ts_wse_cfg c = wt_cfg(2, 1);
    int ok = 0, nomem = 0;
    for (long n = 1; n < 400; n++) {
        ts_err err;
        ts_err_init(&err);
        ts_status st;
        ts_alloc_fail_after(n);
        ts_model *m = wt_run(&c, src, false, 1, 10000, &st, &err);
        long failed = ts_alloc_failures();
        ts_alloc_fail_after(0);
        if (m) {
            ok++;
            if (!failed) {
                float v[8];
                ts_wse_read_sram(m, 1, 0, 0, v, sizeof v);
                ck_assert_float_eq(v[7], 8.0f);
                wt_free(m);
                ts_err_free(&err);
                break;
            }
            wt_free(m);
        } else {
            ck_assert_msg(st == TS_ENOMEM, "allocation %ld: status %d: %s", n, st, err.msg);
            nomem++;
        }
        ts_err_free(&err);
    }
    ck_assert_int_gt(nomem, 10);
    ck_assert_int_ge(ok, 1);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wse_pe");
    TCase *tc = tcase_create("pe");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, fadds_width_and_values);
    tcase_add_test(tc, bank_and_stride_rules);
    tcase_add_test(tc, mac_fp32_fp16);
    tcase_add_test(tc, fh2s_halves);
    tcase_add_test(tc, tasks);
    tcase_add_test(tc, pe_errors);
    tcase_add_test(tc, endless_loops);
    tcase_add_test(tc, polling_a_vector_op_is_no_endless_loop);
    tcase_add_test(tc, allocation_failures);
    tcase_add_test(tc, gemv_matches_c_reference);
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
