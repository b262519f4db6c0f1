/* tests/calibration/tsp/test_tsp_calibration.c — the first-generation config (configs/tsp_v1.yaml)
 * against the published figures in research/groq_tsp.md (§1.1, §2.4, §7.2). Each figure is a row of
 * tests/calibration/calib.h: emergent (the model produces it; the band is the figure's precision)
 * or configured (a key was set to it; its yaml line must say so), or a known gap, printed and not
 * asserted. Every program also runs in lockstep and on three threads with an identical report
 * (tsp_test_run2). Run with --table to print the table that docs/tsp.md carries.
 *
 * tsp_v1 positions west to east: MXM W1 0, MXM W0 1, SXM W 2, MEM W43..W0 3..46, VXM 47,
 * MEM E0..E43 48..91, SXM E 92, MXM E0 93, MXM E1 94. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/tsp/tsp_int.h"
#include "tests/arch/tsp/tsp_test.h"
#include "tests/calibration/calib.h"

#define V1 "tsp_v1"

typedef struct sched {
    ts_program *p;
    uint64_t cur[1024];
} sched;

static void at(sched *s, int q, uint64_t t)
{
    ck_assert_msg(t >= s->cur[q], "queue %d: cycle %llu already past", q, (unsigned long long)t);
    if (t > s->cur[q])
        tsp_emit(s->p, q, "nop", 1, (int)(t - s->cur[q]));
    s->cur[q] = t + 1;
}

static sched *sched_new(void)
{
    sched *s = calloc(1, sizeof *s);
    s->p = ts_program_create("tsp");
    return s;
}

static void sched_free(sched *s)
{
    ts_program_destroy(s->p);
    free(s);
}

/* Peak MACs per cycle: 409,600 INT8 (4 planes x 320 x 320; ISCA20 §III-D, MPR20; research §1.1,
 * §7.2.1). Tolerance: exact. Every plane installs one row (to hold INT8 weights) and then takes an
 * activation every cycle for 200 cycles; the activations come from one MEM slice per hemisphere
 * reading every cycle (repeat), one hop apart, so the outer plane issues a cycle later. */
START_TEST(peak_int8_macs_per_cycle)
{
    void *config = tsp_test_config(V1, NULL);
    const void *c = ts_config_data(config);
    sched *s = sched_new();
    enum { N = 200 };
    for (int h = 0; h < 2; h++) {
        int mq = ts_tsp_queue_mem(c, h, 0), pm = ts_tsp_queue_position(c, mq);
        int dir_w = h == 0; /* west planes take westward streams */
        int sw = dir_w ? W(0) : E(0), sx = dir_w ? W(1) : E(1);
        /* one weight row, then N activations */
        at(s, mq, 0);
        tsp_emit(s->p, mq, "read", 3, 0, sw, 0);
        tsp_emit(s->p, mq, "read", 3, 1, sx, 0);
        tsp_emit(s->p, mq, "repeat", 2, N - 1, 1);
        for (int pl = 0; pl < 2; pl++) {
            int q = ts_tsp_queue_mxm(c, h, pl, 0), px = ts_tsp_queue_position(c, q);
            uint64_t d = (uint64_t)(px > pm ? px - pm : pm - px);
            at(s, q, 1 + d);
            tsp_emit(s->p, q, "iw", 4, T_I8, sw, 1, 0);
            at(s, q + 1, 2 + d);
            tsp_emit(s->p, q + 1, "abc", 5, T_I8, sx, 0, 0, 0);
            tsp_emit(s->p, q + 1, "repeat", 2, N - 1, 1);
        }
    }
    tsp_run r;
    tsp_test_run2(V1, NULL, s->p, &r);
    ck_assert_double_eq(tsp_stat(&r, "mxm.peak_macs_per_cycle"), 409600);
    ck_assert_double_eq(tsp_stat(&r, "mxm.macs_int8"), 4.0 * N * 320 * 320);
    ts_info info;
    ts_err e;
    ts_err_init(&e);
    ck_assert_int_eq(ts_tsp_family.info(c, &info, &e), TS_OK);
    ck_assert_double_eq(info.peak[0].macs, 409600);
    /* FP16: about a quarter (BRIEF 188 TFLOPS at 900 MHz; research §1.1) */
    ck_assert_double_eq(info.peak[1].macs, 102400);
    cal_emergent("peak INT8 MACs per cycle", V1, tsp_stat(&r, "mxm.peak_macs_per_cycle"), 409600, 409600, 409600,
                 "MAC/cycle", "§1.1, §7.2 ISCA20 §III-D, MPR20",
                 "4 planes (floorplan) x 320 x 320 (mxm.dim), each taking an activation every cycle; exact, the "
                 "figure is that product");
    tsp_run_free(&r);
    sched_free(s);
    ts_config_destroy(config);
}
END_TEST

/* Peak FP16 MACs per cycle: 102,400, about a quarter of INT8 (BRIEF 188 TFLOPS at 900 MHz, MPR
 * via summary; research §1.1). Tolerance: exact. Each plane installs an f16 row (a stream pair
 * from MEM 0 and 1) and takes an f16 activation pair (MEM 2 and 3) every mxm.fp16_interval = 4
 * cycles: five abc in flight per plane, each adding 320 x 16 products per cycle. */
START_TEST(peak_fp16_macs_per_cycle)
{
    void *config = tsp_test_config(V1, NULL);
    const void *c = ts_config_data(config);
    sched *s = sched_new();
    enum { N = 50 };
    for (int h = 0; h < 2; h++) {
        int px0 = ts_tsp_queue_position(c, ts_tsp_queue_mxm(c, h, 0, 0));
        uint64_t Tiw = 60, Ta = 64;
        for (int j = 0; j < 4; j++) {
            int mq = ts_tsp_queue_mem(c, h, j), pm = ts_tsp_queue_position(c, mq);
            uint64_t d = (uint64_t)(px0 > pm ? px0 - pm : pm - px0);
            int st = h == 0 ? W(j) : E(j);
            at(s, mq, (j < 2 ? Tiw : Ta) - 1 - d);
            tsp_emit(s->p, mq, "read", 3, 0, st, 0);
            if (j >= 2)
                tsp_emit(s->p, mq, "repeat", 2, N - 1, 4);
        }
        for (int pl = 0; pl < 2; pl++) { /* the outer plane sees everything one cycle later */
            int q = ts_tsp_queue_mxm(c, h, pl, 0);
            at(s, q, Tiw + (uint64_t)pl);
            tsp_emit(s->p, q, "iw", 4, T_F16, h == 0 ? W(0) : E(0), 2, 0);
            at(s, q + 1, Ta + (uint64_t)pl);
            tsp_emit(s->p, q + 1, "abc", 5, T_F16, h == 0 ? W(2) : E(2), 0, 0, 0);
            tsp_emit(s->p, q + 1, "repeat", 2, N - 1, 4);
        }
    }
    tsp_run r;
    tsp_test_run2(V1, NULL, s->p, &r);
    ck_assert_double_eq(tsp_stat(&r, "mxm.peak_macs_per_cycle"), 102400);
    ck_assert_double_eq(tsp_stat(&r, "mxm.macs_fp16"), 4.0 * N * 320 * 320);
    ck_assert_double_eq(tsp_stat(&r, "hazards.resource"), 0);
    cal_configured("peak FP16 MACs per cycle", V1, tsp_stat(&r, "mxm.peak_macs_per_cycle"), 102400, 102400, 102400,
                   "MAC/cycle", "§1.1 BRIEF (188 TFLOPS at 900 MHz)", V1, "mxm.fp16_interval", "188 TFLOPS",
                   "mxm.fp16_interval = 4 was inferred from this figure; exact");
    tsp_run_free(&r);
    sched_free(s);
    ts_config_destroy(config);
}
END_TEST

/* SRAM bandwidth: 56,320 B per cycle = 88 slices x 2 banks x 320 B (ISCA20 §II-B Eq. 1-2;
 * research §1.1, §7.2.2). Tolerance: exact. Every MEM slice reads bank 0 and, paired in the same
 * cycle, writes back to bank 1 the vector it read the cycle before. */
START_TEST(sram_bandwidth_per_cycle)
{
    void *config = tsp_test_config(V1, NULL);
    const void *c = ts_config_data(config);
    sched *s = sched_new();
    enum { N = 60 };
    for (int h = 0; h < 2; h++)
        for (int n = 0; n < 44; n++) {
            int q = ts_tsp_queue_mem(c, h, n), st = h ? W(n % 32) : E(n % 32);
            tsp_emit(s->p, q, "read", 3, 0, st, 0);
            for (int i = 0; i < N; i++) {
                tsp_emit(s->p, q, "read", 3, i + 1, st, 0);
                tsp_emit(s->p, q, "write", 3, 5000 + i, st, 0);
            }
            tsp_emit(s->p, q, "write", 3, 5000 + N, st, 0);
        }
    tsp_run r;
    tsp_test_run2(V1, NULL, s->p, &r);
    ck_assert_double_eq(tsp_stat(&r, "mem.peak_bytes_per_cycle"), 56320);
    ck_assert_double_eq(tsp_stat(&r, "hazards.bank_conflict"), 0);
    ck_assert_uint_eq(r.r.bytes[TS_LEVEL_SRAM], 88ull * 2 * (N + 1) * 320);
    cal_emergent("SRAM bandwidth", V1, tsp_stat(&r, "mem.peak_bytes_per_cycle"), 56320, 56320, 56320, "B/cycle",
                 "§1.1, §7.2 ISCA20 §II-B Eq. 1-2",
                 "88 slices (floorplan) x a read and a write on different banks (mem.banks) x 320 B; exact, the "
                 "figure is that product");
    tsp_run_free(&r);
    sched_free(s);
    ts_config_destroy(config);
}
END_TEST

/* Stream bandwidth of one MEM hemisphere: 2 directions x 32 B/lane x 320 lanes = 20,480 B/cycle
 * (ISCA20 §II-B; research §1.1, §7.2.2). Every stream of both directions crosses the hemisphere's
 * edge at the VXM with a new vector every cycle: west MEM j (j < 32) reads onto eastward stream j
 * and east MEM j writes what arrives; east MEM j reads onto westward stream j and west MEM j writes
 * that (each slice a read on bank 0 and a write on bank 1, paired in one cycle). Emergent: no key
 * holds the figure; it is the streams the ISA can name (streams.per_direction = 32, ISCA20 §I-B,
 * Fig. 4), each carrying a vector per cycle without a collision, a missing value or a bank
 * conflict. The rate is the west hemisphere's bytes out and in per cycle, the difference of two
 * runs (n and 2n vectors per slice and direction), so the transit and the sweep cancel; the first
 * vector of each slice is checked where it lands. */
static void stream_run(const void *c, int n, tsp_run *r)
{
    sched *s = sched_new();
    for (int j = 0; j < 32; j++) {
        int q[2] = {ts_tsp_queue_mem(c, 0, j), ts_tsp_queue_mem(c, 1, j)};
        uint64_t d = 1 + (uint64_t)(ts_tsp_queue_position(c, q[1]) - ts_tsp_queue_position(c, q[0]));
        for (int h = 0; h < 2; h++) {
            uint8_t v[320];
            for (int b = 0; b < 320; b++)
                v[b] = (uint8_t)(b * 7 + j * 13 + h * 101);
            tsp_data(s->p, ts_tsp_mem_index(c, h, j), 0, v, 320);
            /* h reads onto its outward stream (west: eastward) and writes what the other side read
             * d cycles before from the inward one */
            int out = h ? W(j) : E(j), in = h ? E(j) : W(j);
            for (uint64_t t = 0; t < (uint64_t)n + d; t++) {
                if (t < (uint64_t)n || t >= d)
                    at(s, q[h], t);
                if (t < (uint64_t)n)
                    tsp_emit(s->p, q[h], "read", 3, (int)t, out, 0);
                if (t >= d)
                    tsp_emit(s->p, q[h], "write", 3, 4096 + (int)(t - d), in, 0);
            }
        }
    }
    tsp_test_run2(V1, NULL, s->p, r);
    ck_assert_double_eq(tsp_stat(r, "hazards.stream_collision"), 0);
    ck_assert_double_eq(tsp_stat(r, "hazards.no_value"), 0);
    ck_assert_double_eq(tsp_stat(r, "hazards.bank_conflict"), 0);
    for (int j = 0; j < 32; j++)
        for (int h = 0; h < 2; h++)
            for (int b = 0; b < 320; b += 53)
                ck_assert_uint_eq(tsp_peek(r, ts_tsp_mem_index(c, 1 - h, j), 4096u * 320 + (uint64_t)b),
                                  (uint8_t)(b * 7 + j * 13 + h * 101));
    sched_free(s);
}

/* bytes read and written by the west hemisphere's MEM (MEM numbering: west first) */
static double west_bytes(const tsp_run *r)
{
    double sum = 0;
    for (size_t i = 0; i < 44; i++)
        sum += tsp_stat_at(r, "mem.bytes_read", i) + tsp_stat_at(r, "mem.bytes_written", i);
    return sum;
}

START_TEST(stream_bandwidth_per_hemisphere)
{
    void *config = tsp_test_config(V1, NULL);
    const void *c = ts_config_data(config);
    tsp_run a, b;
    stream_run(c, 30, &a);
    stream_run(c, 60, &b);
    double rate = (west_bytes(&b) - west_bytes(&a)) / (double)(b.r.cycles - a.r.cycles);
    cal_emergent("stream bandwidth of one MEM hemisphere, all streams busy", V1, rate, 20480, 20480, 20480, "B/cycle",
                 "§1.1, §7.2 ISCA20 §II-B",
                 "2 directions x 32 streams (streams.per_direction) x 320 B, each a vector per cycle; exact, the "
                 "figure is that product");
    tsp_run_free(&a);
    tsp_run_free(&b);
    ts_config_destroy(config);
}
END_TEST

/* Full weight install in under 40 cycles, SRAM read and transit included (ISCA20 §V, MPR via
 * summary; research §1.5, §2.4): 16 streams per plane, 256 weights per supercell per cycle, all four
 * planes at once. The model takes 20 cycles of iw plus 19 of superlane stagger = 39 from the first
 * iw to the last row in the last superlane, and the SRAM reads and transit that feed it come before:
 * with one stream register per slice (streams.sr_map, assumed) the farthest feeding slice, MEM W12,
 * is 34 hops from its plane, so from the first read to the last row takes 1 + 34 + 39 = 74 cycles.
 * The row reports those 74 against "< 40" as a known gap: the research does not give the stream-
 * register map (45 register files per superlane is an unverified summary, §1.2) nor how the paper's
 * count overlaps the stagger, so the missing part cannot be modelled honestly yet. */
START_TEST(full_weight_install)
{
    void *config = tsp_test_config(V1, NULL);
    const void *c = ts_config_data(config);
    sched *s = sched_new();
    uint64_t first_read = UINT64_MAX, t_last_iw = 0;
    for (int h = 0; h < 2; h++)
        for (int pl = 0; pl < 2; pl++) {
            int q = ts_tsp_queue_mxm(c, h, pl, 0), px = ts_tsp_queue_position(c, q);
            uint64_t T0 = 40; /* after the farthest feeding slice's transit */
            for (int j = 0; j < 16; j++) {
                /* plane 0 (next to the SXM) from MEM 43..28, plane 1 (at the edge) from MEM 27..12 */
                int mq = ts_tsp_queue_mem(c, h, 43 - pl * 16 - j), pm = ts_tsp_queue_position(c, mq);
                uint64_t d = (uint64_t)(px > pm ? px - pm : pm - px);
                int st = h == 0 ? W(pl * 16 + j) : E(pl * 16 + j);
                for (int i = 0; i < 20; i++) {
                    uint64_t t = T0 + (uint64_t)i - 1 - d;
                    if (t < first_read)
                        first_read = t;
                    at(s, mq, t);
                    tsp_emit(s->p, mq, "read", 3, i, st, 1);
                }
            }
            for (int i = 0; i < 20; i++) {
                at(s, q, T0 + (uint64_t)i);
                tsp_emit(s->p, q, "iw", 4, T_I8, h == 0 ? W(pl * 16) : E(pl * 16), 16, 1);
                t_last_iw = T0 + (uint64_t)i;
            }
        }
    tsp_run r;
    tsp_test_run2(V1, NULL, s->p, &r);
    ck_assert_double_eq(tsp_stat(&r, "mxm.install_cycles"), 39);
    ck_assert(tsp_stat(&r, "mxm.install_cycles") < 40);
    /* with the SRAM read and transit of the farthest feeding slice (MEM W12, 34 hops) in front */
    uint64_t with_feed = t_last_iw + 20 - first_read;
    ck_assert_uint_eq(with_feed, 39 + 1 + 34);
    ck_assert_double_eq(tsp_stat(&r, "hazards.no_value"), 0);
    cal_gap("full weight install, SRAM read and transit included", V1, (double)with_feed, 40, 0, 39, "cycles",
            "§1.5, §2.4 ISCA20 §V, MPR via summary (< 40)", CAL_EMERGENT,
            "the published bound itself: under 40 cycles",
            "not modelled: the stream-register map (§1.2) and how the count overlaps the 19-cycle stagger; "
            "iw alone takes 39");
    tsp_run_free(&r);
    sched_free(s);
    ts_config_destroy(config);
}
END_TEST

/* A chip-wide Sync/Notify barrier takes 35 cycles (ISCA20 §III-A2; research §1.8, §2.4).
 * Tolerance: exact. All 144 queues but one sync at cycle 0; queue 0 notifies at 0; every queue's
 * next instruction issues at 35. */
START_TEST(chip_wide_sync_notify)
{
    sched *s = sched_new();
    tsp_emit(s->p, 0, "notify", 0);
    for (int q = 1; q < 144; q++) {
        tsp_emit(s->p, q, "sync", 0);
        tsp_emit(s->p, q, "nop", 1, 1);
    }
    tsp_run r;
    tsp_test_run2(V1, NULL, s->p, &r);
    ck_assert_double_eq(tsp_stat(&r, "icu.last_release"), 35);
    ck_assert_uint_eq(r.r.cycles, 36);
    ck_assert_double_eq(tsp_stat_at(&r, "queue.instructions", 0), 1);
    ck_assert_double_eq(tsp_stat_at(&r, "queue.instructions", 143), 2);
    cal_configured("chip-wide Sync/Notify barrier", V1, tsp_stat(&r, "icu.last_release"), 35, 35, 35, "cycles",
                   "§1.8 ISCA20 §III-A2", V1, "icu.sync_cycles", "35", "icu.sync_cycles = 35, this figure; exact");
    tsp_run_free(&r);
    sched_free(s);
}
END_TEST

/* A 320-element dot product completes in 20 cycles (MPR via summary; research §1.5, §2.4).
 * Tolerance: exact. Plane W0 installs row 0 = w, takes x, and acc reads the result 20 cycles
 * after abc (and finds nothing at 19). MEM W43..W40 store the four bytes of y[0] = w . x. */
static ts_program *dot_program(const void *c, int8_t *w, int8_t *x, uint64_t acc_delay)
{
    sched *s = sched_new();
    int mq0 = ts_tsp_queue_mem(c, 0, 0), mq1 = ts_tsp_queue_mem(c, 0, 1);
    int q = ts_tsp_queue_mxm(c, 0, 0, 0), px = ts_tsp_queue_position(c, q);
    int p0 = ts_tsp_queue_position(c, mq0), p1 = ts_tsp_queue_position(c, mq1);
    tsp_data(s->p, ts_tsp_mem_index(c, 0, 0), 0, w, 320);
    tsp_data(s->p, ts_tsp_mem_index(c, 0, 1), 0, x, 320);
    uint64_t Tiw = 1 + (uint64_t)(p0 - px), Ta = Tiw + 1;
    at(s, mq0, 0);
    tsp_emit(s->p, mq0, "read", 3, 0, W(0), 1);
    at(s, mq1, Ta - 1 - (uint64_t)(p1 - px));
    tsp_emit(s->p, mq1, "read", 3, 0, W(1), 2);
    at(s, q, Tiw);
    tsp_emit(s->p, q, "iw", 4, T_I8, W(0), 1, 1);
    at(s, q + 1, Ta);
    tsp_emit(s->p, q + 1, "abc", 5, T_I8, W(1), 0, 2, 7);
    uint64_t Tacc = Ta + acc_delay;
    at(s, q + 2, Tacc);
    tsp_emit(s->p, q + 2, "acc", 3, E(0), 7, 8);
    for (int j = 0; j < 4; j++) {
        int sq = ts_tsp_queue_mem(c, 0, 43 - j), ps = ts_tsp_queue_position(c, sq);
        at(s, sq, Tacc + 1 + (uint64_t)(ps - px));
        tsp_emit(s->p, sq, "write", 3, 9, E(j), 8);
    }
    ts_program *p = s->p;
    s->p = NULL;
    free(s);
    return p;
}

START_TEST(dot_product_in_20_cycles)
{
    void *config = tsp_test_config(V1, NULL);
    const void *c = ts_config_data(config);
    int8_t w[320], x[320];
    int32_t ref = 0;
    for (int l = 0; l < 320; l++) {
        w[l] = (int8_t)(l * 13 - 90);
        x[l] = (int8_t)(77 - l * 5);
        ref += w[l] * x[l];
    }
    ts_program *p = dot_program(c, w, x, 20);
    tsp_run r;
    tsp_test_run2(V1, NULL, p, &r);
    uint32_t y = 0;
    for (int j = 0; j < 4; j++)
        y |= (uint32_t)tsp_peek(&r, ts_tsp_mem_index(c, 0, 43 - j), 9 * 320) << (8 * j);
    ck_assert_int_eq((int32_t)y, ref);
    tsp_run_free(&r);
    ts_program_destroy(p);
    p = dot_program(c, w, x, 19);
    tsp_test_run(V1, NULL, p, false, false, &r);
    ck_assert_int_eq(r.rc, TS_ESIM);
    ck_assert_msg(strstr(tsp_errmsg(&r), "the latch holds no value yet"), "%s", tsp_errmsg(&r));
    /* the result is there 20 cycles after abc and not at 19 */
    cal_configured("320-element dot product", V1, 20, 20, 20, 20, "cycles", "§1.5 MPR via summary", V1, "d_func.abc",
                   "completes in 20 cycles", "d_func.abc = 20, this figure; exact");
    tsp_run_free(&r);
    ts_program_destroy(p);
    ts_config_destroy(config);
}
END_TEST

/* An instruction sweeps all 20 superlanes in 20 cycles (MPR20; ISCA20 §II-C; research §2.2).
 * Tolerance: exact. One read at cycle 0: superlane k reads at k, its result lands at k + 1. */
START_TEST(instruction_sweep)
{
    sched *s = sched_new();
    tsp_emit(s->p, 0, "read", 3, 0, E(0), 0);
    tsp_run r;
    tsp_test_run2(V1, NULL, s->p, &r);
    ck_assert_double_eq(tsp_stat(&r, "icu.sweep_cycles"), 20);
    ck_assert_uint_eq(r.r.cycles, 1 + 20);
    cal_configured("instruction sweep over the superlanes", V1, tsp_stat(&r, "icu.sweep_cycles"), 20, 20, 20, "cycles",
                   "§2.2 MPR20, ISCA20 §II-C", V1, "superlanes", "20", "superlanes = 20 (MPR20), one per cycle; exact");
    tsp_run_free(&r);
    sched_free(s);
}
END_TEST

static Suite *calibration_suite(void)
{
    Suite *s = suite_create("tsp_calibration");
    TCase *tc = tcase_create("published");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, peak_int8_macs_per_cycle);
    tcase_add_test(tc, peak_fp16_macs_per_cycle);
    tcase_add_test(tc, sram_bandwidth_per_cycle);
    tcase_add_test(tc, stream_bandwidth_per_hemisphere);
    tcase_add_test(tc, full_weight_install);
    tcase_add_test(tc, chip_wide_sync_notify);
    tcase_add_test(tc, dot_product_in_20_cycles);
    tcase_add_test(tc, instruction_sweep);
    suite_add_tcase(s, tc);
    return s;
}

int main(int argc, char **argv)
{
    bool table = argc > 1 && !strcmp(argv[1], "--table");
    arch_modes_default = ARCH_MODES_QUICK; /* the whole tsp_v1: every mode costs as much as the fast one */
    SRunner *sr = srunner_create(calibration_suite());
    if (table)
        srunner_set_fork_status(sr, CK_NOFORK); /* the rows live in this process */
    srunner_run_all(sr, table ? CK_SILENT : CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (table)
        cal_print(stdout);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
