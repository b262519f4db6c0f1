/* tests/arch/wse/test_wse_fabric.c — routers and links: exact latencies, multicast, back-pressure,
 * switches, colour independence and deadlock detection, driven by small assembly programs. */
#include <check.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "tests/arch/wse/wse_test.h"

/* A single wavelet from (0,0) to (x,y) over X-then-Y routes lands in the destination's core queue
 * at exactly 2 * ramp_latency + pipeline_latency + hops * hop_latency (docs/wse.md, "Timing"). */
static void check_latency(uint32_t w, uint32_t h, uint64_t hop, uint64_t ramp)
{
    ts_wse_cfg c = wt_cfg(w, h);
    c.hop_latency = hop;
    c.ramp_latency = ramp;
    c.queue_depth = hop + 1;
    c.iq_depth = ramp + 1;
    c.oq_depth = ramp + 1;
    uint32_t dests[][2] = {{0, 0}, {1, 0}, {0, 1}, {w - 1, 0}, {0, h - 1}, {w - 1, h - 1}, {w / 2, h - 1}};
    for (size_t d = 0; d < sizeof dests / sizeof dests[0]; d++) {
        uint32_t dx = dests[d][0], dy = dests[d][1];
        ts_buf *routes = calloc(w * h, sizeof *routes), *code = calloc(w * h, sizeof *code);
        wt_route_xy(routes, w, 3, 0, 0, dx, dy);
        ts_buf_puts(&code[0], "    send 3, r0\n");
        ts_buf_printf(&code[dy * w + dx], "    recv r1, 3\n");
        ts_buf prog = {0};
        wt_join(&prog, routes, code, w * h);
        ts_err err;
        ts_err_init(&err);
        ts_status st;
        ts_model *m = wt_run(&c, prog.data, false, 1, 100000, &st, &err);
        ck_assert_msg(m, "run failed: %s", err.msg);
        uint64_t hops = dx + dy;
        ck_assert_uint_eq(ts_wse_arrival(m, dx, dy, 3, 0), 2 * ramp + c.pipeline_latency + hops * hop);
        ck_assert_uint_eq(ts_wse_arrivals(m, dx, dy, 3), 1);
        ts_wse_counts k;
        ts_wse_counts_get(m, &k);
        ck_assert_uint_eq(k.hops, hops);
        wt_free(m);
        ts_err_free(&err);
        ts_buf_free(&prog);
        for (uint32_t i = 0; i < w * h; i++) {
            ts_buf_free(&routes[i]);
            ts_buf_free(&code[i]);
        }
        free(routes);
        free(code);
    }
}

START_TEST(latency_default)
{
    check_latency(8, 8, 1, 2);
}
END_TEST

START_TEST(latency_configured)
{
    check_latency(6, 5, 3, 4);
    check_latency(16, 2, 2, 1);
}
END_TEST

/* Multicast: (0,0) broadcasts 5 wavelets to every PE of a 6x4 mesh along row 0 then down every
 * column; each PE gets each wavelet once, in order. */
START_TEST(multicast_once)
{
    uint32_t w = 6, h = 4;
    ts_buf prog = {0};
    ts_buf_puts(&prog, ".arch wse\n");
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            uint32_t rx, tx = WT_R;
            if (y == 0) {
                rx = x == 0 ? WT_R : WT_W;
                if (x + 1 < w)
                    tx |= WT_E;
                if (h > 1)
                    tx |= WT_S;
                if (x == 0)
                    tx &= ~(uint32_t)WT_R;
            } else {
                rx = WT_N;
                if (y + 1 < h)
                    tx |= WT_S;
            }
            ts_buf_printf(&prog, ".stream pe %u\n    route 5, %u, %u\n", y * w + x, rx, tx);
            if (x == 0 && y == 0) {
                ts_buf_puts(&prog, "    li r1, 100\n    li r2, 5\nl:  send 5, r1\n    addi r1, r1, 1\n"
                                   "    addi r2, r2, -1\n    bnz r2, l\n");
            } else {
                for (int k = 0; k < 5; k++)
                    ts_buf_printf(&prog, "    recv r3, 5\n    st r3, r0, %d\n", 4 * k);
            }
        }
    ts_wse_cfg c = wt_cfg(w, h);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, prog.data, false, 1, 100000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++) {
            if (!x && !y)
                continue;
            ck_assert_uint_eq(ts_wse_arrivals(m, x, y, 5), 5);
            int32_t v[5];
            ts_wse_read_sram(m, x, y, 0, v, sizeof v);
            for (int k = 0; k < 5; k++)
                ck_assert_int_eq(v[k], 100 + k);
            /* the first wavelet, sent in cycle 2: 2 ramps + the core pipeline + the distance */
            ck_assert_uint_eq(ts_wse_arrival(m, x, y, 5, 0), 2 + 4 + 1 + x + y);
        }
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    ck_assert_uint_eq(k.wavelets_injected, 5);
    ck_assert_uint_eq(k.wavelets_delivered, 5 * (w * h - 1));
    wt_free(m);
    ts_err_free(&err);
    ts_buf_free(&prog);
}
END_TEST

/* Back-pressure: a sender pushes 200 wavelets as fast as it can; the receiver, 5 hops away, takes
 * one every 7 cycles. Nothing is lost or reordered, and the sender spends its time stalled. */
START_TEST(backpressure_no_loss)
{
    uint32_t w = 6, h = 1;
    ts_buf routes[6] = {{0}}, code[6] = {{0}};
    wt_route_xy(routes, w, 2, 0, 0, 5, 0);
    ts_buf_puts(&code[0], "    li r2, 200\nl:  send 2, r1\n    addi r1, r1, 1\n    addi r2, r2, -1\n    bnz r2, l\n");
    ts_buf_puts(&code[5], "    li r2, 200\n    li r4, 0\nl:  recv r3, 2\n    st r3, r4, 0\n    addi r4, r4, 4\n"
                          "    wait 4\n    addi r2, r2, -1\n    bnz r2, l\n");
    ts_buf prog = {0};
    wt_join(&prog, routes, code, w * h);
    ts_wse_cfg c = wt_cfg(w, h);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, prog.data, false, 1, 1000000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    int32_t v[200];
    ts_wse_read_sram(m, 5, 0, 0, v, sizeof v);
    for (int k = 0; k < 200; k++)
        ck_assert_int_eq(v[k], k);
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    ck_assert_uint_eq(k.wavelets_injected, 200);
    ck_assert_uint_eq(k.wavelets_delivered, 200);
    ck_assert_uint_eq(k.hops, 200 * 5);
    /* the receiver loop is 7 cycles per wavelet (recv, st, addi, wait 4 = 4 cycles, addi, bnz
     * minus overlap): the run is bounded by it */
    ck_assert_uint_ge(k.cycles, 200 * 7);
    wt_free(m);
    ts_err_free(&err);
    ts_buf_free(&prog);
    for (int i = 0; i < 6; i++) {
        ts_buf_free(&routes[i]);
        ts_buf_free(&code[i]);
    }
}
END_TEST

/* Link throughput: one wavelet per cycle per port. 1000 wavelets over 7 hops arrive one per
 * cycle once the first is through (research §2.1, JAC). */
START_TEST(link_one_per_cycle)
{
    uint32_t w = 8, h = 1, n = 1000;
    ts_buf routes[8] = {{0}}, code[8] = {{0}};
    wt_route_xy(routes, w, 0, 0, 0, 7, 0);
    ts_buf_printf(&code[0], "    dsdm 0, 0, %u, 0\n    dsdout 1, 0, %u, 0\n    fmovs 1, 0, -1, -1\n", n, n);
    ts_buf_printf(&code[7], "    dsdin 0, 0, %u\n    dsdm 1, 0, %u, 1\n    fmovs 1, 0, -1, -1\n", n, n);
    ts_buf prog = {0};
    wt_join(&prog, routes, code, w * h);
    ts_wse_cfg c = wt_cfg(w, h);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, prog.data, false, 1, 1000000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    uint64_t first = ts_wse_arrival(m, 7, 0, 0, 0);
    /* dsd set-up in cycles 0 and 1; fmovs issues in cycle 2 and moves its first element then */
    ck_assert_uint_eq(first, 2 + 2 * 2 + 1 + 7);
    for (uint32_t k = 1; k < WSE_ARRIVAL_LOG; k++)
        ck_assert_uint_eq(ts_wse_arrival(m, 7, 0, 0, k), first + k);
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    /* receiver: its fmovs finishes the cycle after the last wavelet lands */
    ck_assert_uint_eq(k.cycles, first + n - 1 + 2);
    wt_free(m);
    ts_err_free(&err);
    ts_buf_free(&prog);
    for (int i = 0; i < 8; i++) {
        ts_buf_free(&routes[i]);
        ts_buf_free(&code[i]);
    }
}
END_TEST

/* A ring of routes on one colour with every PE injecting fills every queue: a deadlock, reported
 * with the PEs, colour and queues of the cycle. */
START_TEST(deadlock_reported)
{
    const char *src =
        ".arch wse\n"
        ".stream pe 0\n    route 0, 18, 4\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
        ".stream pe 1\n    route 0, 24, 2\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
        ".stream pe 3\n    route 0, 17, 8\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
        ".stream pe 2\n    route 0, 20, 1\n    li r2, 20\nl: send 0, r2\n    addi r2, r2, -1\n    bnz r2, l\n";
    ts_wse_cfg c = wt_cfg(2, 2);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, src, false, 1, 100000, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_int_eq(st, TS_ESIM);
    ck_assert_msg(strstr(err.msg, "deadlock: a cycle of 4 full router queues"), "got: %s", err.msg);
    ck_assert_ptr_nonnull(err.detail);
    ck_assert_msg(strstr(err.detail, "PE (1, 0) colour 0 input west (2 of 2 wavelets) waits on"), "got: %s", err.detail);
    ck_assert_msg(strstr(err.detail, "PE (0, 1) colour 0 input east"), "got: %s", err.detail);
    ck_assert(err.cycle > 0);
    ts_err_free(&err);
}
END_TEST

/* A congested colour does not block another on the same links. Colour 1 stalls at a receiver that
 * never reads it; colour 2 on the same path still gets through at full speed. */
START_TEST(colours_independent)
{
    uint32_t w = 4, h = 1;
    ts_buf routes[4] = {{0}}, code[4] = {{0}};
    wt_route_xy(routes, w, 1, 0, 0, 3, 0);
    wt_route_xy(routes, w, 2, 0, 0, 3, 0);
    ts_buf_puts(&code[0], "    li r2, 30\nl:  send 1, r2\n    addi r2, r2, -1\n    bnz r2, l\n"
                          "    li r2, 10\nm:  send 2, r2\n    addi r2, r2, -1\n    bnz r2, m\n");
    ts_buf_puts(&code[3], "    li r2, 10\nl:  recv r3, 2\n    addi r2, r2, -1\n    bnz r2, l\n");
    ts_buf prog = {0};
    wt_join(&prog, routes, code, w * h);
    ts_wse_cfg c = wt_cfg(w, h);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    /* colour 1 fills and stays: the run never finishes, so cap it */
    ts_model *m = wt_run(&c, prog.data, false, 1, 2000, &st, &err);
    /* colour 1 is stuck at the sender (30 wavelets do not fit in the queues), so the sender never
     * reaches colour 2: that is the program's own order. Instead check the frozen state is not
     * reported as a deadlock (no cycle) and is left to the hang detector. */
    ck_assert_msg(m, "run failed: %s", err.msg);
    wt_free(m);
    ts_err_free(&err);
    ts_buf_free(&prog);
    for (int i = 0; i < 4; i++) {
        ts_buf_free(&routes[i]);
        ts_buf_free(&code[i]);
    }

    /* now with colour 1 sent by an async microthread: colour 2 passes while colour 1 is stuck */
    ts_buf r2[4] = {{0}}, c2[4] = {{0}};
    wt_route_xy(r2, w, 1, 0, 0, 3, 0);
    wt_route_xy(r2, w, 2, 0, 0, 3, 0);
    ts_buf_puts(&c2[0], "    dsdm 0, 0, 30, 0\n    dsdout 1, 1, 30, 0\n    fmovs 1, 0, 0, -1\n"
                        "    li r2, 10\nm:  send 2, r2\n    addi r2, r2, -1\n    bnz r2, m\n");
    ts_buf_puts(&c2[3], "    li r2, 10\nl:  recv r3, 2\n    addi r2, r2, -1\n    bnz r2, l\n");
    ts_buf p2 = {0};
    wt_join(&p2, r2, c2, w * h);
    ts_err_init(&err);
    m = wt_run(&c, p2.data, false, 1, 2000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    ck_assert_uint_eq(ts_wse_arrivals(m, 3, 0, 2), 10);
    ck_assert_uint_eq(ts_wse_arrivals(m, 3, 0, 1), 4); /* the core queue of colour 1 holds 4 */
    wt_free(m);
    ts_err_free(&err);
    ts_buf_free(&p2);
    for (int i = 0; i < 4; i++) {
        ts_buf_free(&r2[i]);
        ts_buf_free(&c2[i]);
    }
}
END_TEST

/* Switches: a control wavelet advances the switch of every router it passes. PE 0 sends one data
 * wavelet east (position 0 at PE 1 delivers it to PE 1), then a control wavelet, then one more
 * data wavelet, which PE 1's position 1 now forwards to PE 2. */
START_TEST(switch_by_control_wavelet)
{
    const char *src =
        ".arch wse\n"
        ".stream pe 0\n    route 4, 16, 4\n    li r1, 11\n    send 4, r1\n    li r1, 40\n    sendc 4, r1\n"
        "    li r1, 22\n    send 4, r1\n"
        ".stream pe 1\n    route 4, 8, 16\n    swpos 4, 1, 8, 4\n    recv r2, 4\n    st r2, r0, 0\n"
        ".stream pe 2\n    route 4, 8, 16\n    bind 40, t, 0\n    recv r2, 4\n    st r2, r0, 0\n    exit\n"
        "t:  li r3, 1\n    st r3, r0, 4\n    exit\n";
    ts_wse_cfg c = wt_cfg(3, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, src, false, 1, 10000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    int32_t v[2];
    ts_wse_read_sram(m, 1, 0, 0, v, 4);
    ck_assert_int_eq(v[0], 11);
    ts_wse_read_sram(m, 2, 0, 0, v, 8);
    ck_assert_int_eq(v[0], 22);
    ck_assert_int_eq(v[1], 0); /* the control wavelet stopped at PE 1's core (no route onward at position 0) */
    wt_free(m);
    ts_err_free(&err);
}
END_TEST

START_TEST(route_errors)
{
    ts_wse_cfg c = wt_cfg(2, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, ".arch wse\n.stream pe 1\n    route 0, 16, 4\n", false, 1, 100, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.msg, "PE (1, 0) pc 0: colour 0 is routed E, off the mesh");
    ts_err_free(&err);
    ts_err_init(&err);
    m = wt_run(&c, ".arch wse\n.stream pe 0\n    route 0, 16, 4\n.stream pe 1\n    route 0, 4, 16\n", false, 1, 100,
               &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.msg, "PE (0, 0) routes colour 0 E, but PE (1, 0) takes no colour 0 from the W");
    ts_err_free(&err);
    ts_err_init(&err);
    m = wt_run(&c, ".arch wse\n.stream pe 0\n    send 3, r0\n", false, 1, 100, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.msg,
                     "PE (0, 0) pc 0: sends on colour 3, but no route of that colour takes wavelets from the ramp");
    ts_err_free(&err);
    ts_err_init(&err);
    m = wt_run(&c, ".arch wse\n.stream pe 0\n    nop\n    route 0, 16, 4\n", false, 1, 100, &st, &err);
    ck_assert_ptr_null(m);
    ck_assert_str_eq(err.msg, "PE (0, 0) pc 1: 'route' configures the PE at load and must come before the first "
                              "executable instruction");
    ts_err_free(&err);
}
END_TEST


/* `image N`: a PE runs PE N's code and task bindings with routes of its own. */
START_TEST(image_runs_code_of_another_pe)
{
    ts_wse_cfg c = wt_cfg(3, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    /* PE 2 sends 77 west; PE 1 keeps a copy (multicast) and passes it on; both run PE 0's data task */
    const char *src = ".arch wse\n"
                      ".stream pe 0\n    route 1, 4, 16\n    bind 1, got, 1\n    exit\ngot:\n    addi r0, r0, 1\n"
                      "    st r0, r15, 0\n    exit\n"
                      ".stream pe 1\n    route 1, 4, 24\n    image 0\n"
                      ".stream pe 2\n    route 1, 16, 8\n    li r1, 77\n    send 1, r1\n";
    ts_model *m = wt_run(&c, src, false, 1, 1000, &st, &err);
    ck_assert_msg(m, "run failed: %s", err.msg);
    int32_t v = 0;
    ts_wse_read_sram(m, 0, 0, 0, &v, 4);
    ck_assert_int_eq(v, 78);
    v = 0;
    ts_wse_read_sram(m, 1, 0, 0, &v, 4);
    ck_assert_int_eq(v, 78);
    wt_free(m);
    static const struct { const char *src, *msg; } bad[] = {
        {".arch wse\n.stream pe 1\n    image 5\n", "PE (1, 0) pc 0: image of PE 5: not another PE of the 3-PE mesh"},
        {".arch wse\n.stream pe 1\n    image 1\n", "PE (1, 0) pc 0: image of PE 1: not another PE of the 3-PE mesh"},
        {".arch wse\n.stream pe 1\n    image 0\n", "PE (1, 0) pc 0: its image has no stream"},
        {".arch wse\n.stream pe 0\n    nop\n.stream pe 1\n    image 0\n.stream pe 2\n    image 1\n",
         "PE (2, 0) pc 0: its image runs another PE's code itself (one level only)"},
        {".arch wse\n.stream pe 0\n    nop\n.stream pe 1\n    image 0\n    route 1, 4, 16\n",
         "PE (1, 0) pc 0: 'image' must be the last instruction of its stream (the code is the image's)"},
        {".arch wse\n.stream pe 0\n    nop\n.stream pe 1\nl:  bind 3, l, 0\n    image 0\n",
         "PE (1, 0) pc 1: 'bind' in a stream with 'image': task bindings come with the image's code"},
        {".arch wse\n.stream pe 0\n    nop\n.stream pe 1\n    image 0\n    nop\n",
         "PE (1, 0) pc 0: 'image' must be the last instruction of its stream (the code is the image's)"},
        {".arch wse\n.stream pe 0\n    route 0, 16, 4\n    send 0, r0\n.stream pe 1\n    route 0, 8, 16\n    image 0\n",
         "PE (1, 0) pc 1: sends on colour 0, but no route of that colour takes wavelets from the ramp (in the code of "
         "PE (0, 0), its image)"},
        /* an image's checks that read no routes are made once per image, yet each PE reports its first
         * failing pc: one of them (the PE before its image's own stream), and a route's before it */
        {".arch wse\n.stream pe 0\n    image 1\n.stream pe 1\n    nop\n    wait 0\n",
         "PE (0, 0) pc 1: wait needs at least 1 cycle (in the code of PE (1, 0), its image)"},
        {".arch wse\n.stream pe 1\n    route 0, 4, 16\n    image 2\n.stream pe 2\n    route 0, 16, 8\n    send 0, r0\n"
         "    wait 0\n",
         "PE (1, 0) pc 1: sends on colour 0, but no route of that colour takes wavelets from the ramp (in the code of "
         "PE (2, 0), its image)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ts_err_free(&err);
        ts_err_init(&err);
        m = wt_run(&c, bad[i].src, false, 1, 100, &st, &err);
        ck_assert_ptr_null(m);
        ck_assert_str_eq(err.msg, bad[i].msg);
    }
    ts_err_free(&err);
}
END_TEST

/* A core waiting for a wavelet that never comes is not a deadlock of queues: the model stops
 * stepping (nothing can change) and leaves it to the hang detector, whose dump says who waits. */
START_TEST(hang_dump)
{
    ts_wse_cfg c = wt_cfg(2, 1);
    ts_err err;
    ts_err_init(&err);
    ts_status st;
    ts_model *m = wt_run(&c, ".arch wse\n.stream pe 0\n    route 2, 4, 16\n    recv r1, 2\n"
                             ".stream pe 1\n    route 2, 16, 8\n    li r1, 5\n    send 2, r1\n    send 2, r1\n"
                             "    recv r1, 3\n    route 3, 16, 16\n", false, 1, 5000, &st, &err);
    ck_assert_ptr_null(m); /* the route after code is refused */
    ts_err_free(&err);
    ts_err_init(&err);
    m = wt_run(&c, ".arch wse\n.stream pe 0\n    route 2, 4, 16\n    recv r1, 2\n    recv r1, 2\n    recv r1, 2\n"
                   ".stream pe 1\n    route 2, 16, 8\n    li r1, 5\n    send 2, r1\n", false, 1, 5000, &st, &err);
    ck_assert_msg(m, "%s", err.msg);
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    ck_assert_uint_eq(k.cycles, 5000); /* ran to the limit without finishing */
    ts_buf b = {0};
    ts_wse_family.blocked(m, &b);
    ck_assert_str_eq(ts_buf_str(&b), "  PE (0, 0) core: main task waits at pc 2 ('recv')\n");
    ts_buf_free(&b);
    wt_free(m);
    ts_err_free(&err);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("wse_fabric");
    TCase *tc = tcase_create("fabric");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, latency_default);
    tcase_add_test(tc, latency_configured);
    tcase_add_test(tc, multicast_once);
    tcase_add_test(tc, backpressure_no_loss);
    tcase_add_test(tc, link_one_per_cycle);
    tcase_add_test(tc, deadlock_reported);
    tcase_add_test(tc, colours_independent);
    tcase_add_test(tc, switch_by_control_wavelet);
    tcase_add_test(tc, route_errors);
    tcase_add_test(tc, image_runs_code_of_another_pe);
    tcase_add_test(tc, hang_dump);
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
