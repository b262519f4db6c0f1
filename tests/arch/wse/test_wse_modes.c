/* tests/arch/wse/test_wse_modes.c — the run modes give the same answers: --lockstep (every tile
 * every cycle) equals the default active-set mode, reports are byte-identical on threads (every
 * mode of tests/arch/arch_modes.h), and the timing-only mode gives the same cycles. Checked on every test program shape:
 * the built-in default, the 32 x 32 GEMV, multicast, back-pressure, tasks, switches, random
 * traffic and a deadlock (whose message must not depend on the mode either). */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wse/wse_kernels.h"
#include "arch/wse/wse_isa.h"
#include "core/alloc.h"
#include "core/fileio.h"
#include "core/program.h"
#include "tests/arch/wse/wse_test.h"

static char *read_default(void)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/arch/wse/programs/wse_default.s", root ? root : ".");
    char *data = NULL;
    size_t len = 0;
    ts_err err;
    ts_err_init(&err);
    ts_status st = ts_read_file(path, &data, &len, &err);
    ck_assert_msg(st == TS_OK, "%s", err.msg);
    ts_err_free(&err);
    return data;
}

static char *multicast_program(void)
{
    ts_buf b = {0};
    ts_buf_puts(&b, ".arch wse\n");
    for (uint32_t y = 0; y < 4; y++)
        for (uint32_t x = 0; x < 4; x++) {
            uint32_t rx = y == 0 ? (x == 0 ? WT_R : WT_W) : WT_N;
            uint32_t tx = (x || y ? WT_R : 0) | (y == 0 && x < 3 ? WT_E : 0) | (y < 3 ? WT_S : 0);
            ts_buf_printf(&b, ".stream pe %u\n    route 5, %u, %u\n", y * 4 + x, rx, tx);
            if (!x && !y)
                ts_buf_puts(&b, "    li r2, 9\nl:  send 5, r2\n    addi r2, r2, -1\n    bnz r2, l\n");
            else
                ts_buf_puts(&b, "    li r2, 9\nl:  recv r3, 5\n    wait 3\n    addi r2, r2, -1\n    bnz r2, l\n");
        }
    return b.data;
}

/* Random single-wavelet traffic on 4 x 4: every PE but the 4 sinks sends 20 wavelets on pseudo-random colours, each
 * colour c routed X-then-Y to sink PE c; sinks count arrivals in a data task. */
static char *traffic_program(void)
{
    uint32_t w = 4, n = w * w;
    ts_buf *routes = calloc(n, sizeof *routes), *code = calloc(n, sizeof *code);
    /* one in-tree per colour: every PE's route leads X-then-Y to the sink */
    for (uint32_t c = 0; c < 4; c++) {
        uint32_t sx = (c * 5 + 1) % w, sy = (c * 3 + 2) % w;
        for (uint32_t y = 0; y < w; y++)
            for (uint32_t x = 0; x < w; x++) {
                /* X first: off the sink's column go east or west, then north or south */
                uint32_t tx = x < sx ? WT_E : x > sx ? WT_W : y < sy ? WT_S : y > sy ? WT_N : WT_R;
                uint32_t rx = WT_R;
                if (x > 0 && x <= sx)
                    rx |= WT_W;
                if (x + 1 < w && x >= sx)
                    rx |= WT_E;
                if (x == sx && y > 0 && y <= sy)
                    rx |= WT_N;
                if (x == sx && y + 1 < w && y >= sy)
                    rx |= WT_S;
                ts_buf_printf(&routes[y * w + x], "    route %u, %u, %u\n", c, rx, tx);
                if (x == sx && y == sy)
                    ts_buf_printf(&routes[y * w + x], "    bind %u, sink%u, 1\n", c, c);
            }
    }
    uint32_t seed = 12345;
    for (uint32_t i = 0; i < n; i++) {
        /* sinks only sink: a sink busy sending could not run its data tasks (tasks run to
         * completion), and senders waiting on it would wait for ever */
        bool sink = strstr(ts_buf_str(&routes[i]), "sink") != NULL;
        for (int k = 0; k < 20 && !sink; k++) {
            seed = seed * 1103515245u + 12345u;
            ts_buf_printf(&code[i], "    send %u, r0\n", (seed >> 16) % 4);
            if ((seed >> 8) % 3 == 0)
                ts_buf_puts(&code[i], "    wait 2\n");
        }
        ts_buf_puts(&code[i], "    exit\n");
        for (uint32_t c = 0; c < 4; c++)
            if (strstr(ts_buf_str(&routes[i]), "sink")) {
                char lbl[32];
                snprintf(lbl, sizeof lbl, "bind %u, sink%u", c, c);
                if (strstr(ts_buf_str(&routes[i]), lbl))
                    ts_buf_printf(&code[i], "sink%u: ld r1, r15, %u\n    addi r1, r1, 1\n    st r1, r15, %u\n    exit\n",
                                  c, 4 * c, 4 * c);
            }
    }
    ts_buf b = {0};
    wt_join(&b, routes, code, n);
    for (uint32_t i = 0; i < n; i++) {
        ts_buf_free(&routes[i]);
        ts_buf_free(&code[i]);
    }
    free(routes);
    free(code);
    return b.data;
}

static const char *const ring_deadlock =
    ".arch wse\n"
    ".stream pe 0\n    route 0, 18, 4\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
    ".stream pe 1\n    route 0, 24, 2\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
    ".stream pe 3\n    route 0, 17, 8\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
    ".stream pe 2\n    route 0, 20, 1\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n";

static const char *const tasks_program =
    ".arch wse\n"
    ".stream pe 0\n    route 0, 16, 4\n    li r1, 5\n    send 0, r1\n    li r1, 7\n    send 0, r1\n    sendc 0, r1\n"
    ".stream pe 1\n    route 0, 8, 16\n    bind 0, t, 1\n    bind 7, u, 0\nt:  ld r1, r15, 0\n    add r1, r1, r0\n"
    "    st r1, r15, 0\n    exit\nu:  li r2, 3\n    st r2, r15, 8\n    exit\n";

static const char *const y32 = "arch: wse\nname: t32\nmesh: {width: 32, height: 32}\n";
static const char *const y4 = "arch: wse\nname: t4\nmesh: {width: 4, height: 4}\n";
static const char *const y2 = "arch: wse\nname: t2\nmesh: {width: 2, height: 2}\n";

START_TEST(modes_default_program)
{
    char *src = read_default();
    wt_modes(y32, src);
    ts_buf out = {0};
    ck_assert_int_eq(wt_report(y32, src, false, 1, &out), TS_OK);
    ck_assert_msg(strstr(ts_buf_str(&out), "fp32_add"), "%s", ts_buf_str(&out));
    ts_buf_free(&out);
    free(src);
}
END_TEST

START_TEST(modes_gemv)
{
    char *src = wt_gemv_program();
    wt_modes(y32, src);
    free(src);
}
END_TEST

START_TEST(modes_small_programs)
{
    char *mc = multicast_program(), *tr = traffic_program();
    wt_modes(y4, mc);
    wt_modes(y4, tr);
    wt_modes(y2, tasks_program);
    wt_modes(y2, ring_deadlock);
    wt_modes(y2, WT_SLEEPERS_PROGRAM);
    ts_buf out = {0};
    ck_assert_int_eq(wt_report(y2, ring_deadlock, false, 2, &out), TS_ESIM);
    ck_assert_msg(strstr(ts_buf_str(&out), "deadlock"), "%s", ts_buf_str(&out));
    ts_buf_free(&out);
    ts_status st = wt_report(y4, tr, false, 1, &out);
    ck_assert_msg(st == TS_OK, "%s", ts_buf_str(&out));
    ts_buf_free(&out);
    free(mc);
    free(tr);
}
END_TEST

/* A PE fails (a load outside its SRAM) in the last band while the first band is busy with a stream
 * of wavelets: with threads, bands go on to the next cycle without waiting for the others when
 * their own tiles settle it, so the first band may be a cycle past the error when it is seen. The
 * error and its cycle are the same in every mode. */
START_TEST(modes_error_while_busy)
{
    ts_buf b = {0};
    ts_buf_puts(&b, ".arch wse\n.stream pe 0\n    route 0, 16, 4\n    li r2, 300\nl:  send 0, r2\n"
                    "    addi r2, r2, -1\n    bnz r2, l\n");
    for (int x = 1; x < 7; x++)
        ts_buf_printf(&b, ".stream pe %d\n    route 0, 8, 4\n", x);
    ts_buf_puts(&b, ".stream pe 7\n    route 0, 8, 16\n    li r2, 300\nl:  recv r3, 0\n    addi r2, r2, -1\n"
                    "    bnz r2, l\n");
    ts_buf_puts(&b, ".stream pe 63\n    li r2, 60\nl:  addi r2, r2, -1\n    bnz r2, l\n    li r3, 1000000\n"
                    "    ld r1, r3, 0\n");
    const char *y8 = "arch: wse\nname: t8\nmesh: {width: 8, height: 8}\n";
    wt_modes(y8, ts_buf_str(&b));
    ts_buf out = {0};
    ck_assert_int_eq(wt_report(y8, ts_buf_str(&b), false, 2, &out), TS_ESIM);
    ck_assert_msg(strstr(ts_buf_str(&out), "PE (7, 7)") && strstr(ts_buf_str(&out), "address"), "%s",
                  ts_buf_str(&out));
    ts_buf_free(&out);
    ts_buf_free(&b);
}
END_TEST

/* Timing-only skips SRAM and arithmetic but gives the same cycles, traffic and working PE-cycles. */
START_TEST(timing_only_same_cycles)
{
    char *srcs[3] = {wt_gemv_program(), read_default(), traffic_program()};
    uint32_t dims[3] = {32, 32, 4};
    for (int i = 0; i < 3; i++) {
        ts_wse_cfg c = wt_cfg(dims[i], dims[i]);
        ts_err err;
        ts_err_init(&err);
        ts_status st;
        ts_model *a = wt_run(&c, srcs[i], false, 1, 1000000, &st, &err);
        ck_assert_msg(a, "%s", err.msg);
        c.timing_only = true;
        ts_model *b = wt_run(&c, srcs[i], false, 2, 1000000, &st, &err);
        ck_assert_msg(b, "%s", err.msg);
        ts_wse_counts ka, kb;
        ts_wse_counts_get(a, &ka);
        ts_wse_counts_get(b, &kb);
        ck_assert_uint_eq(ka.cycles, kb.cycles);
        ck_assert_uint_eq(ka.hops, kb.hops);
        ck_assert_uint_eq(ka.insns, kb.insns);
        ck_assert_uint_eq(ka.sram_read, kb.sram_read);
        /* the PE-cycles busy or stalled are the simulated work: the same in lockstep, where every
         * PE is evaluated every cycle, as in the active set, which evaluates fewer */
        c.timing_only = false;
        ts_model *l = wt_run(&c, srcs[i], true, 1, 1000000, &st, &err);
        ck_assert_msg(l, "%s", err.msg);
        ts_wse_counts kl;
        ts_wse_counts_get(l, &kl);
        ck_assert_uint_gt(ka.pe_working, 0);
        ck_assert_uint_eq(ka.pe_working, kb.pe_working);
        ck_assert_uint_eq(ka.pe_working, kl.pe_working);
        ck_assert_uint_lt(ka.tile_cycles, kl.tile_cycles);
        wt_free(l);
        wt_free(a);
        wt_free(b);
        ts_err_free(&err);
        free(srcs[i]);
    }
}
END_TEST


/* The generated uniform-traffic program: cores sleeping in `wait` leave the active set and are
 * woken by a timer; cycles, deliveries and per-PE work equal the lockstep run. */
START_TEST(modes_uniform_traffic)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_wse_sinks_program(&p, 8, 8, 12, 40, 0.05, 7, &err), TS_OK);
    ts_buf text = {0};
    ck_assert_int_eq(ts_disasm(p, &ts_wse_isa, &text, &err), TS_OK);
    ts_program_destroy(p);
    wt_modes("arch: wse\nname: t8\nmesh: {width: 8, height: 8}\n", ts_buf_str(&text));
    ts_buf_free(&text);
    ts_err_free(&err);
}
END_TEST

/* A run long enough (about 11,000 cycles) for the threads to re-split the mesh by measured work
 * twice (after 1024 cycles, then every 8192): the reports do not change. Under ThreadSanitizer
 * about 3,100 cycles, re-split once: the second re-split runs the first's code (the eleven
 * thousand took about 50 s of CPU there). */
START_TEST(modes_rebalanced)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    const bool tsan = arch_tsan();
    ck_assert_int_eq(ts_wse_sinks_program(&p, 8, 8, 5, tsan ? 120 : 500, 0.05, 11, &err), TS_OK);
    ts_buf text = {0};
    ck_assert_int_eq(ts_disasm(p, &ts_wse_isa, &text, &err), TS_OK);
    ts_program_destroy(p);
    ts_buf out = {0};
    ck_assert_int_eq(wt_report("arch: wse\nname: t8\nmesh: {width: 8, height: 8}\n", ts_buf_str(&text), false, 1, &out),
                     TS_OK);
    const char *cy = strstr(ts_buf_str(&out), "cycles");
    ck_assert_ptr_nonnull(cy);
    uint64_t cycles = 0;
    for (const char *c = cy + strcspn(cy, "0123456789"); (*c >= '0' && *c <= '9') || *c == ','; c++)
        cycles = *c == ',' ? cycles : cycles * 10 + (uint64_t)(*c - '0');
    ck_assert_msg(cycles > (tsan ? 1024 : 9216), "%.200s", cy);
    ts_buf_free(&out);
    /* the re-splits happen only in the fast mode on threads: under the sanitizers (TS_SANITIZED),
     * which look at the threads, the run on 3 threads alone, whose bands are uneven (the six modes
     * took 66 s under ThreadSanitizer on a loaded 2-core host, lockstep on threads most of it; the
     * programs above run in every mode there) */
    wt_modes_in("arch: wse\nname: t8\nmesh: {width: 8, height: 8}\n", ts_buf_str(&text),
                getenv("TS_SANITIZED") ? 1u << ARCH_THREADS3 : 0);
    ts_buf_free(&text);
    ts_err_free(&err);
}
END_TEST

/* Twelve bands (more than the six threads the ring of summaries held before), which meet only where
 * they touch: a band may run up to eleven cycles ahead of the farthest one, and the report is the
 * one-thread report byte for byte. */
START_TEST(modes_many_bands)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_wse_sinks_program(&p, 16, 16, 6, arch_tsan() ? 10 : 120, 0.05, 5, &err), TS_OK);
    ts_buf text = {0};
    ck_assert_int_eq(ts_disasm(p, &ts_wse_isa, &text, &err), TS_OK);
    ts_program_destroy(p);
    const char *y = "arch: wse\nname: t16\nmesh: {width: 16, height: 16}\n";
    ts_buf one = {0}, many = {0};
    ck_assert_int_eq(wt_report(y, ts_buf_str(&text), false, 1, &one), TS_OK);
    ck_assert_int_eq(wt_report(y, ts_buf_str(&text), false, 12, &many), TS_OK);
    ck_assert_str_eq(ts_buf_str(&many), ts_buf_str(&one));
    ts_buf_free(&one);
    ts_buf_free(&many);
    ts_buf_free(&text);
    ts_err_free(&err);
}
END_TEST

/* The 25-point stencil: every PE talks to four neighbours every round, so wavelets and credits cross
 * the band edges of 2 and 3 threads every cycle. */
START_TEST(modes_stencil25)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_wse_stencil_program(&p, 9, 7, 6, 4, 2, true, &err), TS_OK);
    ts_buf text = {0};
    ck_assert_int_eq(ts_disasm(p, &ts_wse_isa, &text, &err), TS_OK);
    ts_program_destroy(p);
    wt_modes("arch: wse\nname: t97\nmesh: {width: 9, height: 7}\n", ts_buf_str(&text));
    ts_buf_free(&text);
    ts_err_free(&err);
}
END_TEST

/* A stencil on 72 x 64 PEs: with one thread more than WSE_SORT_MIN (4096) tiles are active at once,
 * so the band sorts its active lists by PE id each cycle (wse_band.c: sort_list); in lockstep and on
 * 2 threads (bands of 2304 PEs) no list is sorted. All three give the same report. (Lockstep on
 * threads, a barrier every cycle, is left to the smaller programs above.) */
START_TEST(modes_sorted_lists)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_wse_stencil_program(&p, 72, 64, 2, 1, 1, true, &err), TS_OK);
    ts_config *cfg = wt_config_text("arch: wse\nname: t7264\nmesh: {width: 72, height: 64}\n");
    /* under the sanitizers (TS_SANITIZED: ThreadSanitizer runs this 20 to 45 times slower) the
     * threaded run alone, which is what they look at */
    arch_opts o = {.modes = getenv("TS_SANITIZED") ? 1u << ARCH_THREADS2 : 1u << ARCH_LOCKSTEP | 1u << ARCH_THREADS2};
    arch_run r;
    arch_modes_check(&ts_wse_family, cfg, p, &o, &r);
    ck_assert_int_eq(r.rc, TS_OK);
    arch_run_free(&r);
    ts_config_destroy(cfg);
    ts_program_destroy(p);
    ts_err_free(&err);
}
END_TEST

/* Replace each `image N` by a copy of PE N's code (its labels moved by the difference of the two
 * configuration prefixes): the program every PE carries its own code in. */
static ts_program *expand_images(const ts_program *p)
{
    ts_program *q = ts_program_create("wse");
    ck_assert_ptr_nonnull(q);
    q->workload = p->workload ? ts_strdup(p->workload) : NULL; /* the report names it */
    for (size_t i = 0; i < p->nstreams; i++) {
        const ts_stream *s = &p->streams[i];
        ts_stream *d = ts_program_stream(q, s->kind, s->index);
        ck_assert_ptr_nonnull(d);
        bool img = s->n && s->insn[s->n - 1].op == WSE_OP_IMAGE;
        for (uint32_t k = 0; k + img < s->n; k++)
            *ts_stream_emit(d, s->insn[k].op) = s->insn[k];
        if (!img)
            continue;
        const ts_stream *src = NULL;
        for (size_t j = 0; j < p->nstreams; j++)
            if (p->streams[j].index == (uint32_t)s->insn[s->n - 1].a[0])
                src = &p->streams[j];
        ck_assert_ptr_nonnull(src);
        uint32_t k0 = 0;
        while (k0 < src->n && (ts_wse_isa.ops[src->insn[k0].op].flags & WSE_F_CFG))
            k0++;
        int32_t shift = (int32_t)(s->n - 1) - (int32_t)k0;
        for (uint32_t k = k0; k < src->n; k++) {
            ts_insn in = src->insn[k];
            for (int j = 0; j < TS_MAX_OPNDS; j++)
                if ((ts_wse_isa.ops[in.op].opnd[j] & TS_OK_KIND_MASK) == TS_OK_LABEL)
                    in.a[j] += shift;
            *ts_stream_emit(ts_program_stream(q, s->kind, s->index), in.op) = in;
        }
    }
    for (size_t i = 0; i < p->nsegs; i++) {
        const ts_segment *g = &p->segs[i];
        ck_assert_int_eq(ts_program_add_segment(q, g->kind, g->index, g->addr, g->bytes, g->len, NULL), TS_OK);
    }
    return q;
}

/* The stencil generator gives PEs of one class (distances to the edges up to the radius, parities)
 * one copy of code through `image`: the same run as with every PE carrying its own copy. */
START_TEST(images_equal_copies)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ck_assert_int_eq(ts_wse_stencil_program(&p, 11, 10, 5, 4, 2, true, &err), TS_OK);
    size_t nimg = 0;
    for (size_t i = 0; i < p->nstreams; i++)
        nimg += p->streams[i].insn[p->streams[i].n - 1].op == WSE_OP_IMAGE;
    /* columns 4 and 6 are 4 or more from both edges and even: one class; every row is a class */
    ck_assert_uint_eq(nimg, 10);
    ts_program *q = expand_images(p);
    ts_buf a = {0}, b = {0}, ra = {0}, rb = {0};
    ck_assert_int_eq(ts_disasm(p, &ts_wse_isa, &a, &err), TS_OK);
    ck_assert_int_eq(ts_disasm(q, &ts_wse_isa, &b, &err), TS_OK);
    ck_assert_ptr_null(strstr(ts_buf_str(&b), "image"));
    const char *yaml = "arch: wse\nname: t1110\nmesh: {width: 11, height: 10}\n";
    ck_assert_int_eq(wt_report(yaml, ts_buf_str(&a), false, 2, &ra), TS_OK);
    ck_assert_int_eq(wt_report(yaml, ts_buf_str(&b), false, 1, &rb), TS_OK);
    ck_assert_msg(!strcmp(ts_buf_str(&ra), ts_buf_str(&rb)), "images:\n%s\n----\ncopies:\n%s", ts_buf_str(&ra),
                  ts_buf_str(&rb));
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_buf_free(&ra);
    ts_buf_free(&rb);
    ts_program_destroy(p);
    ts_program_destroy(q);
    ts_err_free(&err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wse_modes");
    TCase *tc = tcase_create("modes");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, modes_default_program);
    tcase_add_test(tc, modes_gemv);
    tcase_add_test(tc, modes_small_programs);
    tcase_add_test(tc, modes_error_while_busy);
    tcase_add_test(tc, timing_only_same_cycles);
    tcase_add_test(tc, modes_uniform_traffic);
    tcase_add_test(tc, modes_stencil25);
    tcase_add_test(tc, modes_sorted_lists);
    tcase_add_test(tc, modes_rebalanced);
    tcase_add_test(tc, modes_many_bands);
    tcase_add_test(tc, images_equal_copies);
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
