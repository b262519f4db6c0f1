/* tests/viz/bench_activity.c — what activity sampling costs on the IPU.
 *
 * Runs the BSP program of bench/bench_ipu_bsp (1216 tiles of ipu_mk1: supersteps of AMP work by
 * six workers, the chip-wide sync, a ring exchange of 24 words) without sampling, with sampling
 * into 65,536-cycle windows (what --summary-png alone uses), into 1,000-cycle windows with an
 * empty frame callback, and with every frame rendered to pixels (--frames without the PNG
 * encoding). Prints the best CPU time of REPEATS runs of each (the modes take turns), and its ratio
 * to the run without.
 *
 * usage: bench_activity [SUPERSTEPS] [REPEATS] [MODE]   (MODE 0..3: run that one only, e.g. under
 * callgrind to count instructions)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/registry.h"
#include "bench/ipu_bsp_program.h"
#include "configs/builtin.h"
#include "core/activity.h"
#include "core/buf.h"
#include "core/program.h"
#include "core/sim.h"
#include "viz/render.h"

static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const ts_err *e)
{
    char line[1400];
    ts_err_format(e, line, sizeof line);
    fprintf(stderr, "bench_activity: %s\n", line);
    return 1;
}

static ts_status empty(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    (void)a;
    (void)err;
    (*(uint64_t *)ud) += f->cycles;
    return TS_OK;
}

static ts_viz_image img;

static ts_status render(void *ud, const ts_activity *a, const ts_act_frame *f, ts_err *err)
{
    (*(uint64_t *)ud) += f->cycles;
    return ts_viz_render_frame(&img, a, f, NULL, err);
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 30;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    int only = argc > 3 ? atoi(argv[3]) : -1;
    if (steps < 1 || repeats < 1)
        return fprintf(stderr, "usage: bench_activity [SUPERSTEPS] [REPEATS] [MODE]\n"), 2;
    const ts_family *fam = ts_family_find("ipu");
    if (!fam)
        return fprintf(stderr, "bench_activity: the ipu family is not built\n"), 2;
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    if (ts_config_load(&cfg, "ipu_mk1", &co, &e) != TS_OK)
        return fail(&e);
    ts_program *p = NULL;
    if (ts_bench_ipu_bsp_program(steps, fam->isa, "bench_activity.s", &p, &e) != TS_OK)
        return fail(&e);
    static const struct {
        const char *name;
        uint64_t window;
        ts_act_frame_fn fn;
    } modes[] = {
        {"no sampling", 0, NULL},
        {"sampling, 65536-cycle windows", 65536, NULL},
        {"sampling, 1000-cycle windows", 1000, empty},
        {"sampling, 1000-cycle frames rendered", 1000, render},
    };
    enum { NMODES = sizeof modes / sizeof modes[0] };
    double best[NMODES];
    uint64_t cycles = 0;
    for (int k = 0; k < NMODES; k++)
        best[k] = 1e30;
    /* the modes take turns within each repeat, so a change in the host's load hits them alike */
    for (int rep = 0; rep < repeats; rep++)
        for (int k = 0; k < NMODES; k++) {
            if (only >= 0 && k != only)
                continue;
            uint64_t seen = 0;
            ts_activity *a = NULL;
            if (modes[k].window && ts_activity_create(&a, modes[k].window, modes[k].fn, &seen, &e) != TS_OK)
                return fail(&e);
            ts_run_opts o = {.activity = a};
            ts_results r;
            double c0 = cpu_s();
            if (ts_sim_run(fam, cfg, p, &o, NULL, &r, &e) != TS_OK)
                return fail(&e);
            double dt = cpu_s() - c0;
            if (dt < best[k])
                best[k] = dt;
            cycles = r.cycles;
            if (a && ts_activity_cycles(a) != r.cycles)
                return fprintf(stderr, "bench_activity: sampled %llu of %llu cycles\n",
                               (unsigned long long)ts_activity_cycles(a), (unsigned long long)r.cycles), 1;
            ts_results_free(&r);
            ts_activity_destroy(a);
        }
    for (int k = 0; k < NMODES; k++)
        if (only < 0 || k == only)
            printf("%-40s %.3f s cpu (best of %d), %.3f x\n", modes[k].name, best[k], repeats,
                   only < 0 ? best[k] / best[0] : 1.0);
    printf("%llu cycles, 1216 tiles, %d supersteps\n", (unsigned long long)cycles, steps + 1);
    ts_viz_image_free(&img);
    ts_program_destroy(p);
    ts_config_destroy(cfg);
    return 0;
}
