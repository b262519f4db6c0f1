/* bench/bench_tsp_mxm.c — simulator speed on a long MXM-bound TSP stream program.
 *
 * On configs/tsp_v1, each of the four MXM planes installs weights and then takes one INT8
 * activation every cycle for N cycles (default 2000), each from a MEM slice reading every cycle,
 * and emits its accumulators every cycle: 409,600 MACs per simulated cycle with real data. Prints
 * simulated cycles per second, slice-cycles per second (cycles x floorplan slices) and MACs per
 * second, for the fast mode on 1 and on THREADS host threads (default 4) and, with a third
 * argument of 1, lockstep; checks that all reports are identical.
 *
 * usage: bench_tsp_mxm [N] [THREADS] [LOCKSTEP]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/registry.h"
#include "arch/tsp/tsp.h"
#include "bench/bench_tsp.h"
#include "configs/builtin.h"

static void emit(ts_program *p, int q, const char *mn, int n, const int *a)
{
    ts_insn *in = ts_stream_emit(ts_program_stream(p, 0, (uint32_t)q), (uint16_t)ts_tsp_op(mn));
    for (int i = 0; i < n; i++)
        in->a[i] = a[i];
}

static void nop_until(ts_program *p, int q, int *cur, int t)
{
    if (t > cur[q])
        emit(p, q, "nop", 1, (int[]){t - cur[q]});
    cur[q] = t + 1;
}

/* The program: per hemisphere MEM 0 reads a weight row, then an activation every cycle (read +
 * repeat); each plane installs the row, then abc and acc every cycle (repeat). */
static ts_program *build(const void *c, int n)
{
    ts_program *p = ts_program_create("tsp");
    int cur[1024] = {0};
    for (int h = 0; h < 2; h++) {
        int mq = ts_tsp_queue_mem(c, h, 0), pm = ts_tsp_queue_position(c, mq);
        int sw = h ? ts_tsp_reg_east(0) : ts_tsp_reg_west(0), sx = h ? ts_tsp_reg_east(1) : ts_tsp_reg_west(1);
        int out = h ? ts_tsp_reg_west(4) : ts_tsp_reg_east(4);
        emit(p, mq, "read", 3, (int[]){0, sw, 0});
        emit(p, mq, "read", 3, (int[]){1, sx, 0});
        emit(p, mq, "repeat", 2, (int[]){n - 1, 1});
        for (int pl = 0; pl < 2; pl++) {
            int q = ts_tsp_queue_mxm(c, h, pl, 0), px = ts_tsp_queue_position(c, q);
            int d = px > pm ? px - pm : pm - px;
            nop_until(p, q, cur, 1 + d);
            emit(p, q, "iw", 4, (int[]){ts_tsp_reg_type(0), sw, 1, 0});
            nop_until(p, q + 1, cur, 2 + d);
            emit(p, q + 1, "abc", 5, (int[]){ts_tsp_reg_type(0), sx, 0, 0, 0});
            emit(p, q + 1, "repeat", 2, (int[]){n - 1, 1});
            nop_until(p, q + 2, cur, 2 + d + 20);
            emit(p, q + 2, "acc", 3, (int[]){out + 8 * pl, 0, 0});
            emit(p, q + 2, "repeat", 2, (int[]){n - 1, 1});
        }
    }
    return p;
}

static int run(const ts_family *fam, const ts_config *cfg, const ts_program *p, bool lockstep, int threads,
               ts_buf *json, double *secs, uint64_t *cycles, uint64_t *macs)
{
    return bench_tsp_run("bench_tsp_mxm", fam, cfg, p, lockstep, threads, CLOCK_MONOTONIC, json, secs, cycles, macs);
}

static void show(const char *what, uint64_t cycles, uint64_t macs, double s)
{
    const double slices = 95; /* tsp_v1 floorplan: 4 MXM + 2 SXM + 88 MEM + 1 VXM */
    printf("%-12s %llu cycles, %.3g MACs in %.3f s: %.3g cycles/s, %.3g slice-cycles/s, %.3g MACs/s\n", what,
           (unsigned long long)cycles, (double)macs, s, (double)cycles / s, slices * (double)cycles / s,
           (double)macs / s);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    bool lock = argc > 3 && atoi(argv[3]) == 1;
    if (n < 1 || threads < 1)
        return fprintf(stderr, "usage: bench_tsp_mxm [N] [THREADS] [LOCKSTEP]\n"), 2;
    const ts_family *fam = ts_family_find("tsp");
    if (!fam)
        return fprintf(stderr, "bench_tsp_mxm: the tsp family is not built\n"), 2;
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    if (ts_config_load(&cfg, "tsp_v1", &co, &e) != TS_OK)
        return bench_fail("bench_tsp_mxm", &e);
    ts_program *p = build(ts_config_data(cfg), n);
    ts_buf a = TS_BUF_INIT, b = TS_BUF_INIT;
    double s;
    uint64_t cycles, macs;
    char label[32];
    int rc = run(fam, cfg, p, false, 1, &a, &s, &cycles, &macs);
    if (!rc)
        show("fast:", cycles, macs, s);
    if (!rc && threads > 1) {
        rc = run(fam, cfg, p, false, threads, &b, &s, &cycles, &macs);
        snprintf(label, sizeof label, "%d threads:", threads);
        if (!rc)
            show(label, cycles, macs, s);
        if (!rc && strcmp(ts_buf_str(&a), ts_buf_str(&b)))
            rc = fprintf(stderr, "bench_tsp_mxm: the %d-thread report differs\n", threads) > 0;
        ts_buf_free(&b);
        b = (ts_buf)TS_BUF_INIT;
    }
    if (!rc && lock) {
        rc = run(fam, cfg, p, true, 1, &b, &s, &cycles, &macs);
        if (!rc)
            show("lockstep:", cycles, macs, s);
        if (!rc && strcmp(ts_buf_str(&a), ts_buf_str(&b)))
            rc = fprintf(stderr, "bench_tsp_mxm: the lockstep report differs\n") > 0;
    }
    if (!rc)
        printf("reports identical\n");
    ts_buf_free(&a);
    ts_buf_free(&b);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    return rc;
}
