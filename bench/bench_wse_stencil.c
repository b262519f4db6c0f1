/* bench/bench_wse_stencil.c — simulator speed and host memory on a stencil over a whole wafer.
 *
 *   bench_wse_stencil [WIDTH] [HEIGHT] [NZ] [RADIUS] [STEPS] [THREADS]
 *
 * Default: the WSE-2 program rectangle, 750 x 994 PEs, nz 8, radius 4 (the 25-point stencil; its
 * program gives each class of PEs one copy of code, the rest run it through `image`), 1 step,
 * 1 thread, in the timing-only mode (no SRAM contents: 48 KB x 745,500 PEs is 36 GB). Prints
 * simulated cycles, wall time, active PE-cycles/s (PE-cycles of PEs busy or stalled, the simulated
 * work, and beside them the PE-cycles the engine evaluated, which fall when it lets PEs sleep),
 * router-cycles/s and the peak resident host memory (target < 8 GiB). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "arch/wse/wse.h"
#include "arch/wse/wse_kernels.h"
#include "bench/bench_wse_run.h"
#include "core/program.h"

int main(int argc, char **argv)
{
    unsigned w = argc > 1 ? (unsigned)atoi(argv[1]) : 750, h = argc > 2 ? (unsigned)atoi(argv[2]) : 994;
    unsigned nz = argc > 3 ? (unsigned)atoi(argv[3]) : 8, radius = argc > 4 ? (unsigned)atoi(argv[4]) : 4;
    unsigned steps = argc > 5 ? (unsigned)atoi(argv[5]) : 1;
    int threads = argc > 6 ? atoi(argv[6]) : 1;
    ts_err err;
    ts_err_init(&err);
    ts_wse_cfg c;
    ts_program *p = NULL;
    ts_model *m = NULL;
    ts_run_opts o = {.threads = threads};
    if (ts_wse_cfg_defaults(&c, &err))
        goto fail;
    c.width = w;
    c.height = h;
    c.timing_only = true;
    double t0 = bench_now_s();
    if (ts_wse_stencil_program(&p, w, h, nz, radius, steps, false, &err) || ts_wse_create(&m, &c, &o, &err) ||
        ts_wse_family.load(m, p, &err))
        goto fail;
    ts_program_destroy(p); /* the model keeps its own predecoded copy */
    p = NULL;
    double t1 = bench_now_s(), dt, cpu;
    ts_step st;
    if (bench_wse_run(m, &st, &dt, &cpu, &err))
        goto fail;
    ts_wse_counts k;
    ts_wse_counts_get(m, &k);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double rc = (double)w * h * (double)k.cycles;
    printf("bench_wse_stencil: %ux%u PEs, nz %u, radius %u, %u step(s), %d thread(s), timing-only\n", w, h, nz, radius,
           steps, threads);
    printf("  build + load          %.2f s\n", t1 - t0);
    printf("  simulated cycles      %llu\n", (unsigned long long)k.cycles);
    printf("  wall time             %.2f s\n", dt);
    printf("  active PE-cycles/s    %.3g (PEs busy or stalled; %.3g evaluated)\n", (double)k.pe_working / dt,
           (double)k.tile_cycles / dt);
    printf("  router-cycles/s       %.3g\n", rc / dt);
    printf("  cpu time              %.2f s (all threads): %.3g active PE-cycles (%.3g evaluated), %.3g router-cycles "
           "per cpu-second\n",
           cpu, (double)k.pe_working / cpu, (double)k.tile_cycles / cpu, rc / cpu);
    printf("  peak host memory      %.2f GiB\n", (double)ru.ru_maxrss / (1024.0 * 1024.0));
    ts_wse_family.destroy(m);
    ts_err_free(&err);
    return 0;
fail:
    fprintf(stderr, "bench_wse_stencil: %s\n", err.msg);
    ts_wse_family.destroy(m);
    ts_program_destroy(p);
    ts_err_free(&err);
    return 1;
}
