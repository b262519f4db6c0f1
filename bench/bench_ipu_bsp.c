/* bench/bench_ipu_bsp.c — simulator speed on a 1216-tile IPU BSP program.
 *
 * Every tile of configs/ipu_mk1 runs 100 supersteps (by default) of: six workers streaming
 * input pairs through the AMP (f32v2amp, 64 issues per worker), the chip-wide sync, and a ring
 * exchange of 24 words to the next tile. Prints simulated tile-cycles per second and supersteps
 * per second for 1 host thread and for N (the second argument, default 4), wall-clock and per
 * CPU-second (the per-core rate, meaningful on a loaded host), and checks that the reports are
 * byte-identical.
 *
 * usage: bench_ipu_bsp [SUPERSTEPS] [THREADS]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/registry.h"
#include "bench/ipu_bsp_program.h"
#include "configs/builtin.h"
#include "core/buf.h"
#include "core/program.h"
#include "core/report.h"
#include "core/sim.h"

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const ts_err *e)
{
    char line[1400];
    ts_err_format(e, line, sizeof line);
    fprintf(stderr, "bench_ipu_bsp: %s\n", line);
    return 1;
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 100;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    if (steps < 1 || threads < 1)
        return fprintf(stderr, "usage: bench_ipu_bsp [SUPERSTEPS] [THREADS]\n"), 2;
    const ts_family *fam = ts_family_find("ipu");
    if (!fam)
        return fprintf(stderr, "bench_ipu_bsp: the ipu family is not built\n"), 2;
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    if (ts_config_load(&cfg, "ipu_mk1", &co, &e) != TS_OK)
        return fail(&e);
    ts_program *p = NULL;
    if (ts_bench_ipu_bsp_program(steps, fam->isa, "bench_ipu_bsp.s", &p, &e) != TS_OK)
        return fail(&e);
    ts_buf ref = TS_BUF_INIT;
    int runs[2] = {1, threads};
    for (int k = 0; k < 2; k++) {
        ts_run_opts o = {.threads = runs[k]};
        ts_results r;
        double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        if (ts_sim_run(fam, cfg, p, &o, NULL, &r, &e) != TS_OK)
            return fail(&e);
        double dt = clock_s(CLOCK_MONOTONIC) - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        const ts_stat *ss = ts_stats_find(r.stats, "supersteps.count");
        double tile_cycles = (double)r.cycles * 1216.0;
        printf("threads %2d: %llu cycles, %llu supersteps, %.3f s wall, %.3f s cpu: %.3g tile-cycles/s, "
               "%.3g tile-cycles per cpu-second (per core), %.3g supersteps/s, amp utilization %.3f\n",
               runs[k], (unsigned long long)r.cycles, (unsigned long long)(ss ? ss->u : 0), dt, cpu, tile_cycles / dt,
               tile_cycles / cpu, (ss ? (double)ss->u : 0) / dt,
               ts_stats_find(r.stats, "amp.utilization")->f);
        ts_buf json = TS_BUF_INIT;
        ts_report_json(&r, &json);
        if (k == 0)
            ts_buf_puts(&ref, ts_buf_str(&json));
        else if (strcmp(ts_buf_str(&ref), ts_buf_str(&json)))
            return fprintf(stderr, "bench_ipu_bsp: the %d-thread report differs from the 1-thread report\n", runs[k]), 1;
        ts_buf_free(&json);
        ts_results_free(&r);
    }
    printf("reports identical for 1 and %d threads\n", threads);
    ts_buf_free(&ref);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    return 0;
}
