/* tests/arch/wse/test_wse_noc.c — the fabric as a network-on-chip (docs/noc.md): synthetic traffic
 * runs to the end in every mode with the same report whatever the hop latency (a router woke the
 * neighbour feeding it only when it popped a full queue, so with hops of 2 cycles or more a loaded
 * run stopped as hung in the fast mode), zero-load latency is a + c * D with c the hop latency, the
 * statistics agree with what was offered, and bad specs are refused. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arch/wse/wse_traffic.h"
#include "core/stats.h"
#include "tests/arch/wse/wse_test.h"

/* An n x n mesh; routing "colour", "xy", "yx" or "o1turn" (with 2 virtual channels). */
static ts_config *cfg_of(uint32_t n, uint32_t hop, uint32_t colours, const char *routing)
{
    char yaml[256];
    snprintf(yaml, sizeof yaml, "arch: wse\nname: noc\nmesh: {width: %u, height: %u}\nfabric: {hop_latency: %u, "
             "colours: %u, routing: %s, vcs: 2}\n", n, n, hop, colours, routing);
    return wt_config_text(yaml);
}

static ts_program *traffic(const ts_config *cfg, const char *spec)
{
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    ck_assert_msg(ts_wse_traffic_load(&p, spec, cfg, &err) == TS_OK, "%s", err.msg);
    ts_err_free(&err);
    return p;
}

static double stat_f(const arch_run *r, const char *name)
{
    const ts_stat *s = ts_stats_find(r->r.stats, name);
    ck_assert_msg(s != NULL, "no statistic %s", name);
    return s->f;
}

/* Loaded transpose traffic past saturation at every hop latency, on colour routes and routed by
 * destination (X then Y, O1TURN, west-first): it finishes (the hang detector stopped the fast mode at 2 and
 * more before the fix) with the same report fast and lockstep, on one thread and two. */
START_TEST(loaded_every_hop_latency)
{
    /* every hop latency on colour routes (where the hang was), two per routing by destination (the
     * tests run under ThreadSanitizer too, 20 to 45 times slower) */
    static const char *const routing[4] = {"colour", "xy", "o1turn", "westfirst"};
    /* under ThreadSanitizer one latency per routing, 2 or 5 (cases 1, 6, 7 and 10: the threads
     * meet at the same band edges at every latency; 47 s of CPU there for the eleven) */
    const bool tsan = arch_tsan();
    for (uint32_t i = 0; i < 11; i++) {
        if (tsan && i != 1 && i != 6 && i != 7 && i != 10)
            continue;
        uint32_t hop = i < 5 ? i + 1 : i % 2 ? 2 : 5, k = i < 5 ? 0 : (i - 5) / 2 + 1;
        ts_config *cfg = cfg_of(8, hop, 24, routing[k]);
        ts_program *p = traffic(cfg, k ? "pattern=uniform,rate=0.4,flits=2,warmup=50,measure=150"
                                       : "pattern=transpose,rate=0.4,warmup=50,measure=300");
        /* lockstep on 2 threads too once (a barrier every cycle: the slowest mode, most of all under
         * ThreadSanitizer) */
        arch_opts o = {.modes = 1u << ARCH_FAST | 1u << ARCH_LOCKSTEP | 1u << ARCH_THREADS2 |
                                (i == 1 ? 1u << ARCH_LOCKSTEP_THREADS2 : 0)};
        arch_run r;
        arch_modes_check(&ts_wse_family, cfg, p, &o, &r);
        ck_assert_msg(r.rc == TS_OK, "%s, hop latency %u: %s", routing[k], hop, r.errline);
        ck_assert_msg(stat_f(&r, "traffic.packets") > 0, "hop latency %u: no packet measured", hop);
        /* past saturation, routers hold wavelets and input ports wait */
        const ts_stat *ps = ts_stats_find(r.r.stats, "fabric.port_stall");
        ck_assert_msg(ps && ps->n == 5 && ps->v[0] + ps->v[1] + ps->v[2] + ps->v[3] > 0, "no port stalled");
        ck_assert_msg(stat_f(&r, "fabric.buffer_occupancy") > 0.1, "empty buffers past saturation");
        arch_run_free(&r);
        ts_program_destroy(p);
        ts_config_destroy(cfg);
    }
}
END_TEST

/* A classic input-queued router (route computation, VC allocation, switch allocation a cycle each,
 * switch traversal and link 2: fabric.hop_latency): a hop costs 5 cycles, and the source router's
 * stages add 3 to the constant; loaded, fast and lockstep agree on 1 and 2 threads. */
START_TEST(router_stages)
{
    ts_config *cfg = wt_config_text("arch: wse\nname: noc\nmesh: {width: 8, height: 8}\n"
                                    "fabric: {hop_latency: 2, routing: xy, vcs: 2}\n"
                                    "router: {route_cycles: 1, vc_alloc_cycles: 1, switch_alloc_cycles: 1}\n");
    ts_program *p = traffic(cfg, "pattern=uniform,rate=0.001,warmup=0,measure=3000");
    arch_run r;
    ck_assert_int_eq(arch_run_mode(&ts_wse_family, cfg, p, NULL, false, 1, &r), TS_OK);
    const ts_stat *t = ts_stats_find(r.r.stats, "traffic.latency_by_distance");
    ck_assert(t && t->nrows >= 4);
    for (size_t k = 0; k < t->nrows; k++)
        ck_assert_msg(t->rows[k * t->ncols + 3] == 8 + 5 * t->rows[k * t->ncols], "distance %g: least latency %g, "
                      "not 8 + 5 D", t->rows[k * t->ncols], t->rows[k * t->ncols + 3]);
    arch_run_free(&r);
    ts_program_destroy(p);
    p = traffic(cfg, "pattern=uniform,rate=0.4,flits=2,warmup=50,measure=150");
    arch_opts o = {.modes = 1u << ARCH_FAST | 1u << ARCH_LOCKSTEP | 1u << ARCH_THREADS2};
    arch_modes_check(&ts_wse_family, cfg, p, &o, &r);
    ck_assert_msg(r.rc == TS_OK, "%s", r.errline);
    arch_run_free(&r);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
}
END_TEST

/* At rate 0.001 a 1-flit packet of D hops takes a + c * D cycles, c the hop latency, a the same
 * for every D and c: the least latency at every distance is exactly that, the mean within a cycle;
 * uniform random traffic routed X then Y and west-first by destination, and transpose on colour
 * routes. */
START_TEST(zero_load_latency)
{
    static const uint32_t mesh[2] = {8, 16}, hops[4] = {1, 2, 3, 5};
    double a = -1;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 12; j++) {
            ts_config *cfg = cfg_of(mesh[i], hops[j % 4], 32, j < 4 ? "xy" : j < 8 ? "colour" : "westfirst");
            ts_program *p = traffic(cfg, j < 4 || j >= 8 ? "pattern=uniform,rate=0.001,warmup=0,measure=2000"
                                                         : "pattern=transpose,rate=0.001,warmup=0,measure=2000");
            arch_run r;
            ck_assert_int_eq(arch_run_mode(&ts_wse_family, cfg, p, NULL, false, 1, &r), TS_OK);
            const ts_stat *t = ts_stats_find(r.r.stats, "traffic.latency_by_distance");
            ck_assert_msg(t && t->nrows >= 4, "%u x %u: too few distances", mesh[i], mesh[i]);
            for (size_t k = 0; k < t->nrows; k++) {
                const double *row = t->rows + k * t->ncols;
                double fit = row[3] - hops[j % 4] * row[0];
                if (a < 0)
                    a = fit;
                ck_assert_msg(fit == a, "%u x %u, hop %u, distance %g: least latency %g is not %g + %u * D",
                              mesh[i], mesh[i], hops[j % 4], row[0], row[3], a, hops[j % 4]);
                ck_assert_msg(row[2] - row[3] < 1, "distance %g: mean %g far above least %g", row[0], row[2], row[3]);
            }
            arch_run_free(&r);
            ts_program_destroy(p);
            ts_config_destroy(cfg);
        }
}
END_TEST

/* Below saturation what is accepted is what is offered, the offer is the rate asked for, and
 * every packet created in the window is counted once. */
START_TEST(offered_accepted)
{
    ts_config *cfg = cfg_of(8, 1, 24, "colour");
    ts_program *p = traffic(cfg, "pattern=neighbour,rate=0.1,flits=4,warmup=200,measure=4000,seed=7");
    arch_run r;
    ck_assert_int_eq(arch_run_mode(&ts_wse_family, cfg, p, NULL, false, 1, &r), TS_OK);
    double off = stat_f(&r, "traffic.offered"), acc = stat_f(&r, "traffic.accepted");
    ck_assert_msg(fabs(off - 0.1) < 0.01, "offered %g, asked 0.1", off);
    ck_assert_msg(fabs(acc - off) < 0.01, "accepted %g, offered %g", acc, off);
    ck_assert_msg(stat_f(&r, "traffic.flits") == 4 * stat_f(&r, "traffic.packets"), "4 flits a packet");
    ck_assert_msg(stat_f(&r, "fabric.buffer_occupancy") < 0.5, "below saturation the queues are nearly empty");
    ck_assert_msg(stat_f(&r, "traffic.latency.min") <= stat_f(&r, "traffic.latency.p50") &&
                  stat_f(&r, "traffic.latency.p50") <= stat_f(&r, "traffic.latency.p99") &&
                  stat_f(&r, "traffic.latency.p99") <= stat_f(&r, "traffic.latency.max"), "percentiles in order");
    arch_run_free(&r);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
}
END_TEST

START_TEST(bad_specs)
{
    static const char *const bad[] = {"pattern=ring", "rate=0", "rate=2", "flits=0", "flits=65", "warmup=-1",
                                      "speed=3", "rate", "route=zx", "measure=600000", "pattern=transpose,seed=x"};
    ts_config *cfg = cfg_of(8, 1, 24, "colour");
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ts_err err;
        ts_err_init(&err);
        ts_program *p = NULL;
        ck_assert_msg(ts_wse_traffic_load(&p, bad[i], cfg, &err) == TS_EINPUT, "'%s' accepted", bad[i]);
        ck_assert_ptr_null(p);
        ck_assert_msg(strstr(err.msg, "traffic") != NULL, "%s", err.msg);
        ts_err_free(&err);
    }
    ts_config_destroy(cfg);
    /* uniform traffic needs a colour per PE: 8 x 8 has too few, 4 x 4 enough */
    ts_err err;
    ts_err_init(&err);
    ts_program *p = NULL;
    cfg = cfg_of(8, 1, 32, "colour");
    ck_assert_int_eq(ts_wse_traffic_load(&p, "pattern=uniform", cfg, &err), TS_EINPUT);
    ck_assert_msg(strstr(err.msg, "colour") != NULL, "%s", err.msg);
    ts_config_destroy(cfg);
    cfg = cfg_of(4, 1, 24, "colour");
    ck_assert_int_eq(ts_wse_traffic_load(&p, "pattern=uniform,rate=0.2", cfg, &err), TS_OK);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    ts_err_free(&err);
}
END_TEST

/* Destination routing's load checks: sendto needs it, colours that are its channels take no
 * routes and no plain send; and a wavelet sent by destination arrives. */
START_TEST(dest_routing_checks)
{
    static const struct {
        const char *fabric, *src, *msg;
    } cases[] = {
        {"{routing: colour}", ".arch wse\n.stream pe 0\n    li r1, 1\n    sendto 0, r1, r1\n", "not a virtual channel"},
        {"{routing: xy}", ".arch wse\n.stream pe 0\n    route 1, 16, 4\n    route 0, 16, 4\n", "takes no routes"},
        {"{routing: xy}", ".arch wse\n.stream pe 0\n    send 0, r1\n", "send with sendto"},
        {"{routing: xy, vcs: 3}", ".arch wse\n.stream pe 0\n    sendto 3, r1, r1\n", "not a virtual channel"},
        {"{routing: o1turn, vcs: 3}", "", "even fabric.vcs"},
        {"{routing: xy, vcs: 2}", ".arch wse\n.stream pe 0\n    li r1, 99\n    sendto 0, r1, r1\n", "outside the"},
        {"{routing: yx, vcs: 2}", ".arch wse\n.stream pe 0\n    li r1, 15\n    li r2, 7\n    sendto 1, r1, r2\n"
                                  ".stream pe 15\n    recv r3, 1\n    st r3, r0, 0\n", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char yaml[200];
        snprintf(yaml, sizeof yaml, "arch: wse\nname: t\nmesh: {width: 4, height: 4}\nfabric: %s\n", cases[i].fabric);
        ts_buf out = TS_BUF_INIT;
        ts_status st = wt_report(yaml, cases[i].src, false, 1, &out);
        if (cases[i].msg)
            ck_assert_msg(st != TS_OK && strstr(ts_buf_str(&out), cases[i].msg), "case %zu: %s", i, ts_buf_str(&out));
        else
            ck_assert_msg(st == TS_OK && strstr(ts_buf_str(&out), "fabric.wavelets_delivered"), "case %zu: %s", i,
                          ts_buf_str(&out));
        ts_buf_free(&out);
    }
}
END_TEST

/* Each pattern's destinations on 4 x 4 (ids y * 4 + x). */
START_TEST(patterns)
{
    ck_assert_uint_eq(ts_wse_traffic_dest(WSE_TR_TRANSPOSE, 4, 4, 1), 4);
    ck_assert_uint_eq(ts_wse_traffic_dest(WSE_TR_BITCOMP, 4, 4, 1), 14);
    ck_assert_uint_eq(ts_wse_traffic_dest(WSE_TR_BITREV, 4, 4, 1), 8);
    ck_assert_uint_eq(ts_wse_traffic_dest(WSE_TR_SHUFFLE, 4, 4, 9), 3);
    ck_assert_uint_eq(ts_wse_traffic_dest(WSE_TR_TORNADO, 4, 4, 0), 5);
    ck_assert_uint_eq(ts_wse_traffic_dest(WSE_TR_NEIGHBOUR, 4, 4, 15), 0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("wse_noc");
    TCase *tc = tcase_create("noc");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, loaded_every_hop_latency);
    /* their runs are on one thread (router_stages' loaded part on two: it stays): under
     * ThreadSanitizer there is no race to find in them (zero_load_latency took 25 s of CPU there) */
    if (!arch_tsan()) {
        tcase_add_test(tc, zero_load_latency);
        tcase_add_test(tc, offered_accepted);
    }
    tcase_add_test(tc, router_stages);
    tcase_add_test(tc, bad_specs);
    tcase_add_test(tc, dest_routing_checks);
    tcase_add_test(tc, patterns);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int nf = srunner_ntests_failed(sr);
    srunner_free(sr);
    return nf ? 1 : 0;
}
