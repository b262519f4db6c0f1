/* tests/arch/tsp/test_tsp_units.c — one group of tests per slice kind, values and cycles checked,
 * every program run fast and in lockstep with identical reports (tsp_test_run2).
 *
 * Small config (configs/tsp_small.yaml): 2 superlanes x 16 lanes = 32-byte vectors; floorplan
 * west to east MXM W0 | SXM W | MEM W3..W0 | VXM | MEM E0..E3 | SXM E | MXM E0 at stream-register
 * positions 0..12 (VXM at 6, MEM W0 at 5, MEM E0 at 7). Queues: MEM W0..W3 = 0..3, MEM E0..E3 = 4..7, VXM ALUs 8..23,
 * MXM W0 24..26, MXM E0 27..29, SXM W 30..43, SXM E 44..57. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/tsp/tsp_int.h"
#include "core/trace.h"
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


/* ---- VXM: one binary or unary op over typed vectors ------------------------------------------
 * a arrives from MEM W0..W3 (byte planes, flowing east), b from MEM E0..E3 (flowing west), both at
 * the VXM (position 6) at cycle T = 6; the result flows east and MEM Ej stores byte plane j at
 * word 1 when it passes. */
enum { T_VXM = 6 };

static uint32_t get_elem(const uint8_t *planes, int w, int lane)
{
    uint32_t v = 0;
    for (int b = 0; b < w; b++)
        v |= (uint32_t)planes[b * VL + lane] << (8 * b);
    return v;
}

/* Run `op type, dst, a[, b]` (or cvt to, from) and return the result elements in out. */
static void run_vxm(const char *op, int to, int from, const uint32_t *a, const uint32_t *b, uint32_t *out, uint64_t *cycles)
{
    static const int width[] = {1, 2, 4, 2, 4};
    int wa = width[from], wo = width[to];
    ts_program *p = ts_program_create("tsp");
    uint8_t pa[4][VL] = {{0}}, pb[4][VL] = {{0}};
    for (int l = 0; l < VL; l++)
        for (int j = 0; j < 4; j++) {
            pa[j][l] = (uint8_t)(a[l] >> (8 * j));
            pb[j][l] = (uint8_t)(b[l] >> (8 * j));
        }
    int opc = ts_tsp_op(op);
    bool cvt = !strcmp(op, "cvt"), mask = !strcmp(op, "mask");
    bool binary = !cvt && !mask && ts_tsp_family.isa->ops[opc].opnd[5] != 0;
    for (int j = 0; j < wa; j++) {
        tsp_data(p, j, 0, pa[j], VL);
        if (T_VXM - 2 - j > 0)
            tsp_emit(p, j, "nop", 1, T_VXM - 2 - j);
        tsp_emit(p, j, "read", 3, 0, E(j), 1);
        if (binary) {
            tsp_data(p, 4 + j, 0, pb[j], VL);
            if (T_VXM - 2 - j > 0)
                tsp_emit(p, 4 + j, "nop", 1, T_VXM - 2 - j);
            tsp_emit(p, 4 + j, "read", 3, 0, W(j), 1);
        }
    }
    tsp_emit(p, 8, "nop", 1, T_VXM);
    int d = 1;
    if (cvt) {
        tsp_emit(p, 8, "cvt", 6, T_I8 + to, T_I8 + from, E(8), E(0), 1, 2);
    } else if (mask) {
        tsp_emit(p, 8, "mask", 6, T_I8 + to, E(8), E(0), (int)b[0], 1, 2);
    } else if (binary) {
        tsp_emit(p, 8, op, 6, T_I8 + to, E(8), E(0), W(0), 1, 2);
    } else {
        tsp_emit(p, 8, op, 5, T_I8 + to, E(8), E(0), 1, 2);
    }
    if (!strcmp(op, "mul") || !strcmp(op, "muls"))
        d = 2;
    if (!strcmp(op, "tanh") || !strcmp(op, "exp") || !strcmp(op, "rsqrt"))
        d = 4;
    for (int j = 0; j < wo; j++) {
        int at = T_VXM + d + 1 + j; /* the result reaches MEM Ej (position 7 + j) */
        int last = binary && j < wa ? T_VXM - 2 - j + 1 : 0;
        if (at - last > 0)
            tsp_emit(p, 4 + j, "nop", 1, at - last);
        tsp_emit(p, 4 + j, "write", 3, 1, E(8 + j), 2);
    }
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    uint8_t po[4][VL] = {{0}};
    for (int j = 0; j < wo; j++)
        for (int l = 0; l < VL; l++)
            po[j][l] = tsp_peek(&r, 4 + j, VL + (uint64_t)l);
    for (int l = 0; l < VL; l++)
        out[l] = get_elem(&po[0][0], wo, l);
    if (cycles)
        *cycles = r.r.cycles;
    ck_assert_double_eq(tsp_stat(&r, "hazards.no_value"), 0);
    tsp_run_free(&r);
    ts_program_destroy(p);
}

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

START_TEST(vxm_integer_ops)
{
    uint32_t a[VL], b[VL], out[VL];
    for (int l = 0; l < VL; l++) {
        a[l] = (uint32_t)(int32_t)((l * 37) % 251 - 125);
        b[l] = (uint32_t)(int32_t)((l * 91) % 241 - 120);
    }
    uint64_t cyc;
    run_vxm("add", 0, 0, a, b, out, &cyc);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], (uint8_t)(int8_t)((int8_t)a[l] + (int8_t)b[l]));
    /* the last result byte plane is stored by MEM E0: issued at 6 + 1 + 1, banks at 9 and 10 */
    ck_assert_uint_eq(cyc, 11);
    run_vxm("adds", 0, 0, a, b, out, NULL);
    for (int l = 0; l < VL; l++) {
        int v = (int8_t)a[l] + (int8_t)b[l];
        v = v > 127 ? 127 : v < -128 ? -128 : v;
        ck_assert_uint_eq(out[l], (uint8_t)v);
    }
    for (int l = 0; l < VL; l++) {
        a[l] = (uint32_t)(l * 4099 - 60000) & 0xffff;
        b[l] = (uint32_t)(30000 - l * 2011) & 0xffff;
    }
    run_vxm("subs", 1, 1, a, b, out, NULL);
    for (int l = 0; l < VL; l++) {
        int v = (int16_t)a[l] - (int16_t)b[l];
        v = v > 32767 ? 32767 : v < -32768 ? -32768 : v;
        ck_assert_uint_eq(out[l], (uint16_t)v);
    }
    for (int l = 0; l < VL; l++) {
        a[l] = (uint32_t)(l * 123457 - 1000000);
        b[l] = (uint32_t)(l * 7919 + 3);
    }
    run_vxm("mul", 2, 2, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], a[l] * b[l]);
    run_vxm("muls", 2, 2, a, b, out, NULL);
    for (int l = 0; l < VL; l++) {
        int64_t v = (int64_t)(int32_t)a[l] * (int32_t)b[l];
        v = v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v;
        ck_assert_uint_eq(out[l], (uint32_t)(int32_t)v);
    }
    run_vxm("neg", 2, 2, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], (uint32_t)-(int64_t)(int32_t)a[l]);
    run_vxm("relu", 2, 2, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], (int32_t)a[l] > 0 ? a[l] : 0);
    b[0] = 0x0ff0f00f;
    run_vxm("mask", 2, 2, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], a[l] & 0x0ff0f00fu);
}
END_TEST

START_TEST(vxm_float_ops_and_conversions)
{
    uint32_t a[VL], b[VL], out[VL];
    for (int l = 0; l < VL; l++) {
        a[l] = fbits((float)l * 0.375f - 5.25f);
        b[l] = fbits(1.5f + (float)l * 0.0625f);
    }
    run_vxm("add", 4, 4, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits(bitsf(a[l]) + bitsf(b[l])));
    run_vxm("mul", 4, 4, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits(bitsf(a[l]) * bitsf(b[l])));
    run_vxm("tanh", 4, 4, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits(tanhf(bitsf(a[l]))));
    run_vxm("exp", 4, 4, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits(expf(bitsf(a[l]))));
    run_vxm("rsqrt", 4, 4, b, a, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits(1.0f / sqrtf(bitsf(b[l]))));
    run_vxm("relu", 4, 4, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits(bitsf(a[l]) > 0 ? bitsf(a[l]) : 0.0f));
    /* f16: operands widened, the result rounded to f16 (0x3c00 = 1.0, 0x4000 = 2.0) */
    for (int l = 0; l < VL; l++) {
        a[l] = 0x3c00u + (uint32_t)l;
        b[l] = 0x4000u;
    }
    run_vxm("mul", 3, 3, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], 0x4000u + (uint32_t)l);
    /* i32 -> f32 and f32 -> i8 (round to nearest even, saturate) */
    for (int l = 0; l < VL; l++)
        a[l] = (uint32_t)(l * 1000003 - 7);
    run_vxm("cvt", 4, 2, a, b, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[l], fbits((float)(int32_t)a[l]));
    for (int l = 0; l < VL; l++)
        a[l] = fbits((float)l * 9.5f - 140.0f);
    run_vxm("cvt", 0, 4, a, b, out, NULL);
    for (int l = 0; l < VL; l++) {
        double r = nearbyint((double)bitsf(a[l]));
        r = r > 127 ? 127 : r < -128 ? -128 : r;
        ck_assert_uint_eq(out[l], (uint8_t)(int8_t)r);
    }
}
END_TEST

/* ALU chaining (research §1.6): ALU 0 adds into its latch only (dst nul); ALU 1 negates the latch
 * one cycle later and puts the result on the streams. */
START_TEST(vxm_chaining_through_the_latch)
{
    static const char text[] =
        ".arch tsp\n"
        ".data mem 0 0\n"
        ".byte 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32\n"
        ".data mem 4 0\n"
        ".byte 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 120\n"
        ".stream queue 0\n  read 0, s0e, 1\n"
        ".stream queue 4\n  read 0, s0w, 1\n  nop 4\n  write 2, s1e, 0\n"
        ".stream queue 8\n  nop 2\n  add i8, nul, s0e, s0w, 1, 5\n"
        ".stream queue 9\n  nop 3\n  neg i8, s1e, alu0, 5, 6\n";
    ts_program *p = tsp_test_asm(text);
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    for (int l = 0; l < VL; l++) {
        int8_t a = (int8_t)(l + 1), b = l < 16 ? 100 : l == 31 ? 120 : 0;
        ck_assert_uint_eq(tsp_peek(&r, 4, 2 * VL + (uint64_t)l), (uint8_t)(int8_t)-(int8_t)(a + b));
    }
    ck_assert_double_eq(tsp_event(&r, "int8_add"), 2 * VL);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST


/* ---- MXM: y = W x + bias through MEM -> MXM -> VXM -> MEM -------------------------------------
 * Generic over the config. West plane 0 (nearest the VXM) takes its weights from MEM W0..W(n-1),
 * one row byte plane per slice per cycle on s0w..s(n-1)w, all timed to reach the plane together
 * so that one iw installs n streams per cycle; x comes from MEM E0 (E1 for the high byte of f16)
 * on westward streams from NS/2; abc multiplies, acc puts int32/f32 results on s0e..s3e toward the
 * VXM, where ALU 0 adds the bias (from MEM W0..W3 on s4e..s7e) and MEM E0..E3 store the four byte
 * planes of y at word OUT_WORD. */
enum { OUT_WORD = 110, X_WORD = 100, B_WORD = 100 };

typedef struct sched {
    ts_program *p;
    uint64_t cur[1024];
} sched;

/* Emit op on queue q at cycle t exactly (a nop fills the gap). */
static void at(sched *s, int q, uint64_t t)
{
    ck_assert_msg(t >= s->cur[q], "queue %d: cycle %llu already past (%llu)", q, (unsigned long long)t,
                  (unsigned long long)s->cur[q]);
    if (t > s->cur[q])
        tsp_emit(s->p, q, "nop", 1, (int)(t - s->cur[q]));
    s->cur[q] = t + 1;
}

typedef struct mv_info {
    int D, nsl, w;
    uint64_t t_iw, t_abc, t_vxm;
} mv_info;

/* Build the program; W is row-major D x D (int8 or f16 bits), x D elements, bias D (int32 or f32
 * bits). */
static ts_program *build_matvec(const char *cfgname, bool f16, const void *Wv, const void *xv, const uint32_t *bias,
                                mv_info *mi)
{
    void *config = tsp_test_config(cfgname, NULL);
    const ts_tsp_cfg *c = ts_config_data(config);
    int D = (int)c->mxm_dim, NS = (int)c->streams, w = f16 ? 2 : 1;
    int nsl = ts_tsp_mem_index(c, 0, 15) >= 0 ? 16 : 4;
    int rows_per_iw = nsl / w, n_iw = D / rows_per_iw;
    int mxq = ts_tsp_queue_mxm(c, 0, 0, 0), px = ts_tsp_queue_position(c, mxq);
    int vq = ts_tsp_queue_vxm(c, 0), pv = ts_tsp_queue_position(c, vq);
    const uint8_t *W8 = Wv;
    const uint16_t *W16 = Wv;
    sched *s = calloc(1, sizeof *s);
    s->p = ts_program_create("tsp");
    uint8_t *plane = calloc((size_t)D, 1);
    /* weights: slice j holds, at word i, byte plane j % w of row i * rows_per_iw + j / w */
    uint64_t T0 = (uint64_t)(pv - px + 1);
    for (int j = 0; j < nsl; j++) {
        int q = ts_tsp_queue_mem(c, 0, j), pj = ts_tsp_queue_position(c, q);
        for (int i = 0; i < n_iw; i++) {
            int row = i * rows_per_iw + j / w;
            for (int l = 0; l < D; l++)
                plane[l] = f16 ? (uint8_t)(W16[(size_t)row * D + l] >> (8 * (j % w))) : W8[(size_t)row * D + l];
            tsp_data(s->p, ts_tsp_mem_index(c, 0, j), (uint64_t)i * (uint64_t)D, plane, (uint32_t)D);
            at(s, q, T0 + (uint64_t)i - 1 - (uint64_t)(pj - px));
            tsp_emit(s->p, q, "read", 3, i, W(j), 1);
        }
    }
    for (int i = 0; i < n_iw; i++) {
        at(s, mxq, T0 + (uint64_t)i);
        tsp_emit(s->p, mxq, "iw", 4, f16 ? T_F16 : T_I8, W(0), nsl, 1);
    }
    /* activations */
    uint64_t Ta = T0 + (uint64_t)n_iw;
    for (int j = 0; j < w; j++) {
        int q = ts_tsp_queue_mem(c, 1, j), pj = ts_tsp_queue_position(c, q);
        for (int l = 0; l < D; l++)
            plane[l] = f16 ? (uint8_t)(((const uint16_t *)xv)[l] >> (8 * j)) : ((const uint8_t *)xv)[l];
        tsp_data(s->p, ts_tsp_mem_index(c, 1, j), (uint64_t)X_WORD * (uint64_t)D, plane, (uint32_t)D);
        at(s, q, Ta - 1 - (uint64_t)(pj - px));
        tsp_emit(s->p, q, "read", 3, X_WORD, W(NS / 2 + j), 2);
    }
    at(s, mxq + 1, Ta);
    tsp_emit(s->p, mxq + 1, "abc", 5, f16 ? T_F16 : T_I8, W(NS / 2), 0, 2, 9);
    uint64_t Tacc = Ta + c->d_func[TSP_OP_ABC];
    at(s, mxq + 2, Tacc);
    tsp_emit(s->p, mxq + 2, "acc", 3, E(0), 9, 3);
    /* bias and the VXM */
    uint64_t Tv = Tacc + c->d_func[TSP_OP_ACC] + (uint64_t)(pv - px);
    for (int j = 0; j < 4; j++) {
        int q = ts_tsp_queue_mem(c, 0, j), pj = ts_tsp_queue_position(c, q);
        for (int l = 0; l < D; l++)
            plane[l] = (uint8_t)(bias[l] >> (8 * j));
        tsp_data(s->p, ts_tsp_mem_index(c, 0, j), (uint64_t)B_WORD * (uint64_t)D, plane, (uint32_t)D);
        at(s, q, Tv - c->d_func[TSP_OP_READ] - (uint64_t)(pv - pj));
        tsp_emit(s->p, q, "read", 3, B_WORD, E(4 + j), 3);
    }
    at(s, vq, Tv);
    tsp_emit(s->p, vq, "add", 6, f16 ? T_F32 : T_I32, E(8), E(0), E(4), 3, 4);
    for (int j = 0; j < 4; j++) {
        int q = ts_tsp_queue_mem(c, 1, j), pj = ts_tsp_queue_position(c, q);
        at(s, q, Tv + c->d_func[TSP_OP_ADD] + (uint64_t)(pj - pv));
        tsp_emit(s->p, q, "write", 3, OUT_WORD, E(8 + j), 4);
    }
    mi->D = D;
    mi->nsl = nsl;
    mi->w = w;
    mi->t_iw = T0;
    mi->t_abc = Ta;
    mi->t_vxm = Tv;
    ts_program *p = s->p;
    free(plane);
    free(s);
    ts_config_destroy(config);
    return p;
}

static uint32_t out_elem(const tsp_run *r, int l, int D)
{
    uint32_t v = 0;
    for (int j = 0; j < 4; j++)
        v |= (uint32_t)tsp_peek(r, ts_tsp_mem_index(r->cfg, 1, j), (uint64_t)OUT_WORD * (uint64_t)D + (uint64_t)l)
             << (8 * j);
    return v;
}

static void matvec_int8(const char *cfgname, int D)
{
    int8_t *Wm = calloc((size_t)D * D, 1), *x = calloc((size_t)D, 1);
    uint32_t *bias = calloc((size_t)D, 4);
    uint32_t seed = 12345;
    for (int i = 0; i < D * D; i++) {
        seed = seed * 1103515245u + 12345u;
        Wm[i] = (int8_t)(seed >> 16);
    }
    for (int l = 0; l < D; l++) {
        x[l] = (int8_t)(l * 29 - 100);
        bias[l] = (uint32_t)(l * 1000 - 7777);
    }
    mv_info mi;
    ts_program *p = build_matvec(cfgname, false, Wm, x, bias, &mi);
    tsp_run r;
    tsp_test_run2(cfgname, NULL, p, &r);
    for (int j = 0; j < D; j++) {
        int32_t ref = 0; /* the plain C reference */
        for (int l = 0; l < D; l++)
            ref += Wm[(size_t)j * D + l] * x[l];
        ref = (int32_t)((uint32_t)ref + bias[j]);
        ck_assert_msg(out_elem(&r, j, D) == (uint32_t)ref, "y[%d] = %d, expected %d", j, (int32_t)out_elem(&r, j, D), ref);
    }
    ck_assert_double_eq(tsp_stat(&r, "mxm.macs_int8"), (double)D * D);
    ck_assert_double_eq(tsp_event(&r, "int8_mac"), (double)D * D);
    ck_assert_double_eq(tsp_event(&r, "int32_add"), (double)D);
    ck_assert_double_eq(tsp_stat(&r, "hazards.no_value"), 0);
    tsp_run_free(&r);
    ts_program_destroy(p);
    free(Wm);
    free(x);
    free(bias);
}

static void matvec_fp16(const char *cfgname, int D)
{
    uint16_t *Wm = calloc((size_t)D * D, 2), *x = calloc((size_t)D, 2);
    uint32_t *bias = calloc((size_t)D, 4);
    uint32_t seed = 777;
    for (int i = 0; i < D * D; i++) {
        seed = seed * 1103515245u + 12345u;
        Wm[i] = ts_f32_to_f16(((float)((seed >> 16) % 2001) - 1000.0f) / 256.0f);
    }
    for (int l = 0; l < D; l++) {
        x[l] = ts_f32_to_f16((float)l * 0.03125f - 3.0f);
        bias[l] = fbits(0.5f * (float)l - 7.0f);
    }
    mv_info mi;
    ts_program *p = build_matvec(cfgname, true, Wm, x, bias, &mi);
    tsp_run r;
    tsp_test_run2(cfgname, NULL, p, &r);
    for (int j = 0; j < D; j++) {
        double acc = 0; /* the plain C reference: exact products, one rounding to f32, then + bias */
        for (int l = 0; l < D; l++)
            acc += (double)ts_f16_to_f32(Wm[(size_t)j * D + l]) * (double)ts_f16_to_f32(x[l]);
        float ref = (float)acc + bitsf(bias[j]);
        ck_assert_msg(out_elem(&r, j, D) == fbits(ref), "y[%d] = %g, expected %g", j, (double)bitsf(out_elem(&r, j, D)),
                      (double)ref);
    }
    ck_assert_double_eq(tsp_stat(&r, "mxm.macs_fp16"), (double)D * D);
    ck_assert_double_eq(tsp_event(&r, "fp16_mac"), (double)D * D);
    ck_assert_double_eq(tsp_event(&r, "fp32_add"), (double)D);
    tsp_run_free(&r);
    ts_program_destroy(p);
    free(Wm);
    free(x);
    free(bias);
}

START_TEST(mxm_matvec_int8_small) { matvec_int8(SMALL, VL); }
END_TEST
START_TEST(mxm_matvec_fp16_small) { matvec_fp16(SMALL, VL); }
END_TEST
/* The bar: 320 x 320 on the first-generation config. */
START_TEST(mxm_matvec_int8_320) { matvec_int8("tsp_v1", 320); }
END_TEST
START_TEST(mxm_matvec_fp16_320) { matvec_fp16("tsp_v1", 320); }
END_TEST


/* ---- SXM: inputs from MEM E0..E(n-1) reach SXM E together; outputs flow back west and MEM Ej
 * stores output stream j at word 3. 16 MEM slices per hemisphere so a transpose can be fed. */
static const char *const wide[] = {"floorplan=[mxm, sxm, mem*16, vxm, mem*16, sxm, mxm]", NULL};

static void run_sxm(const char *op, int nops, const int *opnds, int nin, uint8_t in[][VL], int nout,
                    uint8_t out[][VL], uint64_t *cycles)
{
    void *config = tsp_test_config(SMALL, wide);
    const ts_tsp_cfg *c = ts_config_data(config);
    int sq = ts_tsp_queue_sxm(c, 1, 0), ps = ts_tsp_queue_position(c, sq);
    sched *s = calloc(1, sizeof *s);
    s->p = ts_program_create("tsp");
    uint64_t T = 1 + (uint64_t)(ps - ts_tsp_queue_position(c, ts_tsp_queue_mem(c, 1, 0)));
    for (int j = 0; j < nin; j++) {
        int q = ts_tsp_queue_mem(c, 1, j), pj = ts_tsp_queue_position(c, q);
        tsp_data(s->p, ts_tsp_mem_index(c, 1, j), 0, in[j], VL);
        at(s, q, T - 1 - (uint64_t)(ps - pj));
        tsp_emit(s->p, q, "read", 3, 0, E(j), 1);
    }
    at(s, sq, T);
    ts_insn *in0 = ts_stream_emit(ts_program_stream(s->p, 0, (uint32_t)sq), (uint16_t)ts_tsp_op(op));
    for (int k = 0; k < nops; k++)
        in0->a[k] = opnds[k];
    uint64_t d = c->d_func[ts_tsp_op(op)];
    for (int j = 0; j < nout; j++) {
        int q = ts_tsp_queue_mem(c, 1, j), pj = ts_tsp_queue_position(c, q);
        at(s, q, T + d + (uint64_t)(ps - pj));
        tsp_emit(s->p, q, "write", 3, 3, W(j), 2);
    }
    tsp_run r;
    tsp_test_run2(SMALL, wide, s->p, &r);
    for (int j = 0; j < nout; j++)
        for (int l = 0; l < VL; l++)
            out[j][l] = tsp_peek(&r, ts_tsp_mem_index(c, 1, j), 3 * VL + (uint64_t)l);
    if (cycles)
        *cycles = r.r.cycles;
    tsp_run_free(&r);
    ts_program_destroy(s->p);
    free(s);
    ts_config_destroy(config);
}

START_TEST(sxm_transpose)
{
    uint8_t in[16][VL], out[16][VL];
    for (int i = 0; i < 16; i++)
        for (int l = 0; l < VL; l++)
            in[i][l] = (uint8_t)(i * 16 + (l % 16) + (l / 16) * 100);
    run_sxm("transpose", 4, (int[]){E(0), W(0), 1, 2}, 16, in, 16, out, NULL);
    /* per superlane k: out stream j, lane 16k + i = in stream i, lane 16k + j */
    for (int j = 0; j < 16; j++)
        for (int l = 0; l < VL; l++)
            ck_assert_uint_eq(out[j][l], in[l % 16][(l / 16) * 16 + j]);
}
END_TEST

START_TEST(sxm_permute)
{
    /* src on s0e (MEM E0), map as 16-bit lane numbers on the pair s2e (MEM E2, low bytes) and
     * s3e (MEM E3, high bytes: zero) */
    uint8_t in[4][VL], out[1][VL];
    uint16_t map[VL];
    for (int l = 0; l < VL; l++) {
        map[l] = (uint16_t)((l * 7 + 3) % VL); /* 7 is prime to 32: a bijection */
        in[0][l] = (uint8_t)(200 - l);
        in[1][l] = 0;
        in[2][l] = (uint8_t)map[l];
        in[3][l] = 0;
    }
    uint64_t cyc;
    run_sxm("permute", 5, (int[]){E(0), W(0), E(2), 1, 2}, 4, in, 1, out, &cyc);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[0][l], in[0][map[l]]);
}
END_TEST

START_TEST(sxm_shift_rotate_distribute)
{
    uint8_t in[2][VL], out[1][VL];
    for (int l = 0; l < VL; l++) {
        in[0][l] = (uint8_t)(l + 1);
        in[1][l] = l % 3 == 0 ? 0xff : (uint8_t)(15 - l % 16);
    }
    run_sxm("shift", 5, (int[]){E(0), W(0), 5, 1, 2}, 1, in, 1, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[0][l], l >= 5 ? in[0][l - 5] : 0);
    run_sxm("shift", 5, (int[]){E(0), W(0), -18, 1, 2}, 1, in, 1, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[0][l], l + 18 < VL ? in[0][l + 18] : 0);
    run_sxm("rotate", 5, (int[]){E(0), W(0), 3, 1, 2}, 1, in, 1, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[0][l], in[0][(l + VL - 3) % VL]);
    run_sxm("distribute", 5, (int[]){E(0), W(0), E(1), 1, 2}, 2, in, 1, out, NULL);
    for (int l = 0; l < VL; l++)
        ck_assert_uint_eq(out[0][l], in[1][l] == 0xff ? 0 : in[0][(l / 16) * 16 + in[1][l]]);
}
END_TEST

/* ---- ICU ----------------------------------------------------------------------------------- */

/* repeat n, d: copies of the previous instruction d cycles apart; nop n idles n cycles. */
START_TEST(icu_repeat_and_nop)
{
    static const char text[] =
        ".arch tsp\n"
        ".stream queue 0\n"
        "  nop 4\n"
        "  read 7, s0e, 0\n"
        "  repeat 3, 5\n"
        "  nop 2\n";
    ts_program *p = tsp_test_asm(text);
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    /* reads at 4, 9, 14, 19; the nop at 20 occupies 20..21 */
    ck_assert_uint_eq(r.r.cycles, 22);
    ck_assert_double_eq(tsp_stat_at(&r, "queue.instructions", 0), 6);
    ck_assert_double_eq(tsp_stat_at(&r, "mem.bytes_read", 0), 4 * VL);
    ck_assert_double_eq(tsp_stat(&r, "icu.sweep_cycles"), 2);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* sync parks queues; a notify releases them icu.sync_cycles (35) later. */
START_TEST(icu_sync_notify)
{
    static const char text[] =
        ".arch tsp\n"
        ".stream queue 0\n  sync\n  nop 1\n"
        ".stream queue 8\n  nop 10\n  sync\n  nop 1\n"
        ".stream queue 30\n  nop 3\n  notify\n";
    ts_program *p = tsp_test_asm(text);
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    ck_assert_double_eq(tsp_stat(&r, "icu.barriers"), 1);
    ck_assert_double_eq(tsp_stat(&r, "icu.last_release"), 3 + 35);
    ck_assert_uint_eq(r.r.cycles, 3 + 35 + 1);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* A queue longer than its capacity (32 in tsp_small) needs ifetch; 640 B bring 20 instructions. */
/* ifetch: 640 B through the queue's 16 B/cycle fetch port take 40 cycles. */
static ts_program *ifetch_program(int nop_len)
{
    /* queue 0 (MEM W0, position 5): 10 nops, an ifetch at 10, then 35 nops of nop_len: 46
     * instructions, 32 preloaded. MEM W2 (position 3) and W1 (4) put the text on s1e / s0e to
     * reach W0 at 10. */
    ts_program *p = ts_program_create("tsp");
    tsp_emit(p, 2, "nop", 1, 7);
    tsp_emit(p, 2, "read", 3, 0, E(1), 0);
    tsp_emit(p, 1, "nop", 1, 8);
    tsp_emit(p, 1, "read", 3, 0, E(0), 0);
    for (int i = 0; i < 10; i++)
        tsp_emit(p, 0, "nop", 1, 1);
    tsp_emit(p, 0, "ifetch", 2, E(0), 0);
    for (int i = 0; i < 35; i++)
        tsp_emit(p, 0, "nop", 1, nop_len);
    return p;
}

START_TEST(icu_ifetch_refills_the_queue)
{
    ts_program *p = ifetch_program(2);
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    /* the text is in at 10 + 40 - 1 = 49; pc 32 issues at 11 + 2 x 21 = 53; the last nop at 79 */
    ck_assert_uint_eq(r.r.cycles, 81);
    ck_assert_double_eq(tsp_stat(&r, "queue.ifetches"), 1);
    ck_assert_double_eq(tsp_stat(&r, "hazards.queue_underrun"), 0);
    tsp_run_free(&r);
    ts_program_destroy(p);
    /* one-cycle nops reach pc 32 at cycle 32, before the fetch is in: the queue runs dry */
    p = ifetch_program(1);
    tsp_test_run(SMALL, NULL, p, false, false, &r);
    ck_assert_int_eq(r.rc, TS_ESIM);
    ck_assert_msg(strstr(tsp_errmsg(&r), "queue underrun") &&
                      strstr(tsp_errmsg(&r), "cycle 32, superlane 0, MEM W0, stream -: queue 0 pc 10 'ifetch' and "
                                             "queue 0 pc 32 'nop'"),
                  "%s", tsp_errmsg(&r));
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* C2C: send on link 3 loops back; receive puts the vector on a stream c2c.latency later. */
START_TEST(c2c_send_receive_loopback)
{
    static const char text[] =
        ".arch tsp\n"
        ".data mem 7 0\n"
        ".byte 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22\n"
        ".stream queue 7\n  read 0, s0e, 1\n  nop 104\n  write 4, s1w, 2\n"
        ".stream queue 44\n  nop 2\n  send 3, s0e, 1\n  nop 100\n  receive 3, s1w, 2\n";
    ts_program *p = tsp_test_asm(text);
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    /* read at 0 by MEM E3 (position 10), at the SXM (11) at 2; send at 2 arrives at 102; receive at
     * 103 puts it on s1w at 104, back at MEM E3 at 105, where a write takes it */
    for (int l = 0; l < 10; l++)
        ck_assert_uint_eq(tsp_peek(&r, 7, 4 * VL + (uint64_t)l), (uint8_t)(9 - l));
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_OFFCHIP], VL);
    ck_assert_double_eq(tsp_event(&r, "pcie_bit"), 8 * VL);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST


/* Gather: MEM W0 takes per-superlane word addresses from a map vector on s0e (from MEM W1) and
 * puts the words on s1e; MEM E0 stores them. Scatter: MEM E0 writes the vector from MEM E2 (s1w)
 * to the per-superlane addresses from MEM E1 (s0w). */
START_TEST(mem_gather_scatter)
{
    uint8_t v[VL], map[VL] = {0};
    ts_program *p = ts_program_create("tsp");
    for (int w = 100; w < 104; w++) {
        for (int l = 0; l < VL; l++)
            v[l] = (uint8_t)(w + 3 * l);
        tsp_data(p, 0, (uint64_t)w * VL, v, VL);
    }
    map[0] = 101;  /* superlane 0: word 101 */
    map[16] = 103; /* superlane 1: word 103 */
    tsp_data(p, 1, 0, map, VL);
    tsp_emit(p, 1, "read", 3, 0, E(0), 1);
    tsp_emit(p, 0, "nop", 1, 2);
    tsp_emit(p, 0, "gather", 4, E(0), E(1), 1, 2);
    /* scatter: map (words 7 and 9) from MEM E1 read at 1, data from MEM E2 read at 0: both at
     * MEM E0 (position 7) at 3 */
    uint8_t smap[VL] = {0}, sv[VL];
    smap[0] = 7;
    smap[16] = 9;
    for (int l = 0; l < VL; l++)
        sv[l] = (uint8_t)(250 - l);
    tsp_data(p, 5, 0, smap, VL);
    tsp_data(p, 6, 0, sv, VL);
    tsp_emit(p, 5, "nop", 1, 1);
    tsp_emit(p, 5, "read", 3, 0, W(0), 3);
    tsp_emit(p, 6, "read", 3, 0, W(1), 3);
    tsp_emit(p, 4, "nop", 1, 3);
    tsp_emit(p, 4, "scatter", 3, W(0), W(1), 3);
    tsp_emit(p, 4, "nop", 1, 2);
    tsp_emit(p, 4, "write", 3, 20, E(1), 2); /* the gathered vector: on s1e at 4 + k at position 5 */
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    for (int l = 0; l < VL; l++) {
        int k = l / 16, w = k ? 103 : 101;
        ck_assert_uint_eq(tsp_peek(&r, 4, 20 * VL + (uint64_t)l), (uint8_t)(w + 3 * l));
        int sw = k ? 9 : 7;
        ck_assert_uint_eq(tsp_peek(&r, 4, (uint64_t)sw * VL + (uint64_t)l), sv[l]);
        ck_assert_uint_eq(tsp_peek(&r, 4, (uint64_t)(k ? 7 : 9) * VL + (uint64_t)l), 0);
    }
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* lw fills the weight buffer (8 x 4 rows from MEM W0..W3 on s0w..s3w), iw nul installs it, then
 * abc x1 (mode 0) and abc x2 (mode 1) one cycle apart, and acc 20 cycles after the second gives
 * W (x1 + x2); MEM W3..W0 store its four byte planes. */
START_TEST(mxm_lw_buffer_and_accumulate)
{
    enum { D = VL };
    int8_t Wm[D][D], x1[D], x2[D];
    for (int j = 0; j < D; j++)
        for (int l = 0; l < D; l++)
            Wm[j][l] = (int8_t)((j * 5 + l * 3) % 17 - 8);
    for (int l = 0; l < D; l++) {
        x1[l] = (int8_t)(l - 16);
        x2[l] = (int8_t)(3 * l % 11 - 5);
    }
    sched *s = calloc(1, sizeof *s);
    s->p = ts_program_create("tsp");
    /* MEM Wj at position 5 - j, the plane at 0: the i-th lw at 8 + i reads what Wj read at
     * 8 + i - 1 - (5 - j) */
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 8; i++) {
            tsp_data(s->p, j, (uint64_t)i * VL, Wm[i * 4 + j], VL);
            at(s, j, 8 + (uint64_t)i - 1 - (uint64_t)(5 - j));
            tsp_emit(s->p, j, "read", 3, i, W(j), 1);
        }
    for (int i = 0; i < 8; i++) {
        at(s, 24, 8 + (uint64_t)i);
        tsp_emit(s->p, 24, "lw", 4, T_I8, W(0), 4, 1);
    }
    at(s, 24, 16);
    tsp_emit(s->p, 24, "iw", 4, T_I8, NUL, 0, 0);
    /* x1, x2 from MEM E0 (position 7) on s8w: abc at 17 and 18 */
    tsp_data(s->p, 4, 200 * VL, x1, VL);
    tsp_data(s->p, 4, 201 * VL, x2, VL);
    at(s, 4, 17 - 1 - 7);
    tsp_emit(s->p, 4, "read", 3, 200, W(8), 2);
    tsp_emit(s->p, 4, "read", 3, 201, W(8), 2);
    at(s, 25, 17);
    tsp_emit(s->p, 25, "abc", 5, T_I8, W(8), 0, 2, 5);
    tsp_emit(s->p, 25, "abc", 5, T_I8, W(8), 1, 2, 6);
    at(s, 26, 18 + 20);
    tsp_emit(s->p, 26, "acc", 3, E(0), 6, 7);
    for (int j = 0; j < 4; j++) {
        int q = 3 - j, pos = 2 + j; /* MEM W3..W0 at positions 2..5 store byte planes 0..3 */
        at(s, q, 38 + 1 + (uint64_t)pos);
        tsp_emit(s->p, q, "write", 3, 300, E(j), 7);
    }
    tsp_run r;
    tsp_test_run2(SMALL, NULL, s->p, &r);
    for (int j = 0; j < D; j++) {
        int32_t ref = 0;
        for (int l = 0; l < D; l++)
            ref += Wm[j][l] * (x1[l] + x2[l]);
        uint32_t y = 0;
        for (int b = 0; b < 4; b++)
            y |= (uint32_t)tsp_peek(&r, 3 - b, 300 * VL + (uint64_t)j) << (8 * b);
        ck_assert_int_eq((int32_t)y, ref);
    }
    ck_assert_double_eq(tsp_stat(&r, "events.mxm.accumulate"), D);
    ck_assert_double_eq(tsp_stat(&r, "mxm.install_cycles"), 2); /* iw nul: one instruction, 2 superlanes */
    tsp_run_free(&r);
    ts_program_destroy(s->p);
    free(s);
}
END_TEST

/* deskew waits for the next multiple of c2c.hac_period (256); config is counted only. */
START_TEST(icu_deskew_and_config)
{
    ts_program *p = tsp_test_asm(".arch tsp\n.stream queue 30\n  nop 10\n  deskew\n  config 1\n  nop 100\n"
                                 ".stream queue 0\n  nop 3\n  read 0, s0e, 0\n  repeat 1, 1\n  nop 300\n  repeat 1, 1\n");
    tsp_run r;
    tsp_test_run2(SMALL, NULL, p, &r);
    /* queue 30: deskew at 10, config at 256, nop 257..356. queue 0: reads at 3 and 4, a nop at 5
     * and its repeat one cycle later (copies follow d cycles apart, whatever the nop's length),
     * which occupies 6..305 */
    ck_assert_uint_eq(r.r.cycles, 357);
    ck_assert_double_eq(tsp_stat_at(&r, "queue.instructions", 30), 4);
    ck_assert_double_eq(tsp_stat_at(&r, "queue.instructions", 0), 5);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* --trace: one row per queue with a program, a slice per instruction from dispatch to its last
 * result, nops and sync waits. */
START_TEST(trace_rows_and_slices)
{
    ts_program *p = tsp_test_asm(".arch tsp\n.stream queue 0\n  nop 2\n  read 0, s0e, 0\n  sync\n"
                                 ".stream queue 30\n  notify\n");
    void *config = tsp_test_config(SMALL, NULL);
    char path[] = "/tmp/tsp_trace_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ts_err e;
    ts_err_init(&e);
    ts_trace *t = NULL;
    ck_assert_int_eq(ts_trace_open(&t, path, 900e6, 0, &e), TS_OK);
    ts_run_opts o = {.trace = t};
    ts_model *m = NULL;
    ck_assert_int_eq(ts_tsp_family.create(&m, config, &o, &e), TS_OK);
    ck_assert_int_eq(ts_tsp_family.load(m, p, &e), TS_OK);
    ts_step st = {0};
    while (!st.done)
        ck_assert_int_eq(ts_tsp_family.step(m, st.now + 1000, &st, &e), TS_OK);
    ts_tsp_family.destroy(m);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    ck_assert_ptr_nonnull(strstr(text, "\"queue 0 (MEM W0)\""));
    ck_assert_ptr_nonnull(strstr(text, "\"queue 30 (SXM W0)\""));
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"read\""));
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"nop\""));
    ck_assert_ptr_nonnull(strstr(text, "\"name\":\"sync wait\""));
    remove(path);
    ts_err_free(&e);
    ts_config_destroy(config);
    ts_program_destroy(p);
}
END_TEST

/* --trace under a limit a slice per instruction would pass half of: 2,000 reads (a repeat)
 * at 100 bytes each under 200 kB merge two at a time, "read" with their count, adding up to
 * every read, and nothing is dropped. */
START_TEST(trace_merges_slices)
{
    ts_program *p = tsp_test_asm(".arch tsp\n.stream queue 0\n  read 0, s0e, 0\n  repeat 1999, 1\n");
    void *config = tsp_test_config(SMALL, NULL);
    char path[] = "/tmp/tsp_trace_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    ts_err e;
    ts_err_init(&e);
    ts_trace *t = NULL;
    ck_assert_int_eq(ts_trace_open(&t, path, 900e6, 200000, &e), TS_OK);
    ts_run_opts o = {.trace = t};
    ts_model *m = NULL;
    ck_assert_int_eq(ts_tsp_family.create(&m, config, &o, &e), TS_OK);
    ck_assert_int_eq(ts_tsp_family.load(m, p, &e), TS_OK);
    ts_step st = {0};
    while (!st.done)
        ck_assert_int_eq(ts_tsp_family.step(m, st.now + 1000, &st, &e), TS_OK);
    ts_tsp_family.destroy(m);
    ck_assert_uint_eq(ts_trace_dropped(t), 0);
    ck_assert_int_eq(ts_trace_close(t, &e), TS_OK);
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    unsigned slices = 0, total = 0;
    for (const char *c = text; (c = strstr(c, "\"name\":\"read\"")); c++) {
        const char *a = strstr(c, "\"count\":");
        ck_assert_ptr_nonnull(a);
        unsigned k = (unsigned)strtoul(a + 8, NULL, 10);
        ck_assert_uint_ge(k, 1);
        ck_assert_uint_le(k, 2);
        total += k;
        slices++;
    }
    ck_assert_uint_eq(total, 2000);
    ck_assert_uint_eq(slices, 1000);
    remove(path);
    ts_err_free(&e);
    ts_config_destroy(config);
    ts_program_destroy(p);
}
END_TEST

/* streams.sr_map: slices may share a stream-register position (research §1.2: the real map is
 * not public). With MEM W3..E1 all on position 1, MEM E0 takes MEM W0's value with no transit. */
START_TEST(shared_register_positions)
{
    static const char *const sets[] = {"streams.sr_map=[0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 3]", NULL};
    void *config = tsp_test_config(SMALL, sets);
    ck_assert_int_eq(ts_tsp_queue_position(ts_config_data(config), 0), 1);
    ck_assert_int_eq(ts_tsp_queue_position(ts_config_data(config), 4), 1);
    ts_config_destroy(config);
    ts_program *p = tsp_test_asm(".arch tsp\n.data mem 0 0\n.byte 42, 43\n"
                                 ".stream queue 0\n  read 0, s0e, 1\n"
                                 ".stream queue 4\n  nop 1\n  write 3, s0e, 1\n");
    tsp_run r;
    tsp_test_run2(SMALL, sets, p, &r);
    ck_assert_uint_eq(tsp_peek(&r, 4, 3 * VL), 42);
    ck_assert_uint_eq(tsp_peek(&r, 4, 3 * VL + 1), 43);
    ck_assert_uint_eq(r.r.cycles, 4);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* Weights latch d_func (1) after iw reads them, through the same commit phase as every result:
 * an abc in the iw's own cycle multiplies the old (zero) row 1, one a cycle later the new one. */
static int32_t abc_after_iw(uint64_t gap)
{
    int8_t row[VL], x[VL];
    for (int l = 0; l < VL; l++) {
        row[l] = (int8_t)(l + 1);
        x[l] = (int8_t)(2 - l % 5);
    }
    sched *s = calloc(1, sizeof *s);
    s->p = ts_program_create("tsp");
    tsp_data(s->p, 0, 0, row, VL);
    tsp_data(s->p, 1, 0, x, VL);
    uint64_t Tiw = 6, Ta = Tiw + gap; /* MEM W0 (position 5) to the plane (0): 1 + 5 cycles */
    at(s, 0, 0);
    tsp_emit(s->p, 0, "read", 3, 0, W(0), 1);
    at(s, 1, Ta - 1 - 4);
    tsp_emit(s->p, 1, "read", 3, 0, W(1), 2);
    /* row 0: zeros from MEM W2 (position 3, word 5) at 4; row 1: the real row at Tiw */
    at(s, 2, 0);
    tsp_emit(s->p, 2, "read", 3, 5, W(2), 0);
    at(s, 24, 4);
    tsp_emit(s->p, 24, "iw", 4, T_I8, W(2), 1, 0);
    at(s, 24, Tiw);
    tsp_emit(s->p, 24, "iw", 4, T_I8, W(0), 1, 1);
    at(s, 25, Ta);
    tsp_emit(s->p, 25, "abc", 5, T_I8, W(1), 0, 2, 7);
    at(s, 26, Ta + 20);
    tsp_emit(s->p, 26, "acc", 3, E(0), 7, 8);
    for (int b = 0; b < 4; b++) { /* MEM W3..W0 at positions 2..5 store bytes 0..3 */
        at(s, 3 - b, Ta + 21 + 2 + (uint64_t)b);
        tsp_emit(s->p, 3 - b, "write", 3, 9, E(b), 8);
    }
    tsp_run r;
    tsp_test_run2(SMALL, NULL, s->p, &r);
    uint32_t y = 0;
    for (int b = 0; b < 4; b++)
        y |= (uint32_t)tsp_peek(&r, 3 - b, 9 * VL + 1) << (8 * b); /* y[1]: row 1 */
    tsp_run_free(&r);
    ts_program_destroy(s->p);
    free(s);
    return (int32_t)y;
}

START_TEST(mxm_weights_latch_after_d_func)
{
    int32_t ref = 0;
    for (int l = 0; l < VL; l++)
        ref += (l + 1) * (2 - l % 5);
    ck_assert_int_eq(abc_after_iw(0), 0);
    ck_assert_int_eq(abc_after_iw(1), ref);
}
END_TEST

/* The built-in workload (arch/tsp/programs/tsp_default.s) on tsp_v1: y = i8(relu(W x)) with row r
 * of W held by MEM W(r mod 16) and x by MEM E0, both read back from the model for the reference. */
START_TEST(default_program)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/arch/tsp/programs/tsp_default.s", root ? root : ".");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    ts_program *p = tsp_test_asm(text);
    tsp_run r;
    tsp_test_run2("tsp_v1", NULL, p, &r);
    for (int j = 0; j < 320; j++) {
        int32_t acc = 0;
        for (int l = 0; l < 320; l++)
            acc += (int8_t)tsp_peek(&r, j % 16, (uint64_t)l) * (int8_t)tsp_peek(&r, 44, (uint64_t)l);
        int32_t y = acc > 0 ? acc : 0;
        y = y > 127 ? 127 : y;
        ck_assert_int_eq((int8_t)tsp_peek(&r, 44, 10 * 320 + (uint64_t)j), y);
    }
    ck_assert_double_eq(tsp_stat(&r, "mxm.install_cycles"), 39);
    tsp_run_free(&r);
    ts_program_destroy(p);
}
END_TEST

/* The ISA table drives the generic assembler and disassembler: the default program survives
 * asm -> disasm -> asm byte for byte. */
START_TEST(disasm_round_trip)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/arch/tsp/programs/tsp_default.s", root ? root : ".");
    FILE *f = fopen(path, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = 0;
    ts_program *p = tsp_test_asm(text);
    ts_err e;
    ts_err_init(&e);
    ts_buf dis = TS_BUF_INIT, a = TS_BUF_INIT, b = TS_BUF_INIT;
    ck_assert_int_eq(ts_disasm(p, ts_tsp_family.isa, &dis, &e), TS_OK);
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&dis), "abc i8, s16w, 0, 2, 3"));
    ck_assert_ptr_nonnull(strstr(ts_buf_str(&dis), "cvt i8, i32, s8e, alu0, 6, 5"));
    ts_program *q = tsp_test_asm(ts_buf_str(&dis));
    ts_program_canonicalize(p);
    ck_assert_int_eq(ts_program_encode(p, &a, &e), TS_OK);
    ck_assert_int_eq(ts_program_encode(q, &b, &e), TS_OK);
    ck_assert_uint_eq(a.len, b.len);
    ck_assert(memcmp(a.data, b.data, a.len) == 0);
    ts_buf_free(&dis);
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_err_free(&e);
    ts_program_destroy(p);
    ts_program_destroy(q);
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
    tcase_add_test(tc, vxm_integer_ops);
    tcase_add_test(tc, vxm_float_ops_and_conversions);
    tcase_add_test(tc, vxm_chaining_through_the_latch);
    tcase_add_test(tc, mxm_matvec_int8_small);
    tcase_add_test(tc, mxm_matvec_fp16_small);
    tcase_add_test(tc, mxm_matvec_int8_320);
    tcase_add_test(tc, mxm_matvec_fp16_320);
    tcase_add_test(tc, sxm_transpose);
    tcase_add_test(tc, sxm_permute);
    tcase_add_test(tc, sxm_shift_rotate_distribute);
    tcase_add_test(tc, icu_repeat_and_nop);
    tcase_add_test(tc, icu_sync_notify);
    tcase_add_test(tc, icu_ifetch_refills_the_queue);
    tcase_add_test(tc, c2c_send_receive_loopback);
    tcase_add_test(tc, default_program);
    tcase_add_test(tc, mem_gather_scatter);
    tcase_add_test(tc, mxm_lw_buffer_and_accumulate);
    tcase_add_test(tc, icu_deskew_and_config);
    tcase_add_test(tc, trace_rows_and_slices);
    tcase_add_test(tc, trace_merges_slices);
    tcase_add_test(tc, disasm_round_trip);
    tcase_add_test(tc, shared_register_positions);
    tcase_add_test(tc, mxm_weights_latch_after_d_func);
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
