/* bench/bench_ipu_bsp.c — simulator speed on a 1216-tile IPU BSP program.
 *
 * Every tile of configs/ipu_mk1 runs 100 supersteps (by default) of: six workers streaming
 * input pairs through the AMP (f32v2amp, 64 issues per worker), the chip-wide sync, and a ring
 * exchange of 24 words to the next tile. Runs it REPEATS times (default 5) with 1 host thread and
 * with N (the second argument, default 4), alternating, and prints for each the best run's
 * simulated tile-cycles per second and supersteps per second, wall-clock and per CPU-second (the
 * per-core rate, meaningful on a loaded host), then the speed-up of N threads over 1 (best wall
 * time over best wall time: the best run is the one least disturbed by other work on the host).
 * Checks that every report is byte-identical.
 *
 * usage: bench_ipu_bsp [SUPERSTEPS] [THREADS] [REPEATS]
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
    int repeats = argc > 3 ? atoi(argv[3]) : 5;
    if (steps < 1 || threads < 1 || repeats < 1)
        return fprintf(stderr, "usage: bench_ipu_bsp [SUPERSTEPS] [THREADS] [REPEATS]\n"), 2;
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
    double best_wall[2] = {0, 0}, best_cpu[2] = {0, 0}, cycles = 0, steps_done = 0, amp = 0;
    for (int rep = 0; rep < repeats; rep++)
        for (int k = 0; k < 2; k++) {
            ts_run_opts o = {.threads = runs[k]};
            ts_results r;
            double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            if (ts_sim_run(fam, cfg, p, &o, NULL, &r, &e) != TS_OK)
                return fail(&e);
            double dt = clock_s(CLOCK_MONOTONIC) - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
            if (rep == 0 || dt < best_wall[k])
                best_wall[k] = dt;
            if (rep == 0 || cpu < best_cpu[k])
                best_cpu[k] = cpu;
            const ts_stat *ss = ts_stats_find(r.stats, "supersteps.count");
            cycles = (double)r.cycles;
            steps_done = ss ? (double)ss->u : 0;
            amp = ts_stats_find(r.stats, "amp.utilization")->f;
            ts_buf json = TS_BUF_INIT;
            ts_report_json(&r, &json);
            if (rep == 0 && k == 0)
                ts_buf_puts(&ref, ts_buf_str(&json));
            else if (strcmp(ts_buf_str(&ref), ts_buf_str(&json)))
                return fprintf(stderr, "bench_ipu_bsp: the %d-thread report differs from the 1-thread report\n", runs[k]), 1;
            ts_buf_free(&json);
            ts_results_free(&r);
        }
    double tile_cycles = cycles * 1216.0;
    for (int k = 0; k < 2; k++)
        printf("threads %2d: %.0f cycles, %.0f supersteps, best of %d: %.3f s wall, %.3f s cpu: %.3g tile-cycles/s, "
               "%.3g tile-cycles per cpu-second (per core), %.3g supersteps/s, amp utilization %.3f\n",
               runs[k], cycles, steps_done, repeats, best_wall[k], best_cpu[k], tile_cycles / best_wall[k],
               tile_cycles / best_cpu[k], steps_done / best_wall[k], amp);
    printf("speed-up of %d threads over 1: %.2fx (best wall times)\n", threads, best_wall[0] / best_wall[1]);
    printf("reports identical for 1 and %d threads\n", threads);
    ts_buf_free(&ref);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    return 0;
}
