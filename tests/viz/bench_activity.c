/* tests/viz/bench_activity.c — what activity sampling costs, per family.
 *
 * FAMILY ipu (default): the BSP program of bench/bench_ipu_bsp (1216 tiles of ipu_mk1: supersteps
 * of AMP work by six workers, the chip-wide sync, a ring exchange of 24 words), N supersteps.
 * FAMILY tsp: the MXM-bound stream program of bench/bench_tsp_mxm on tsp_v1 (both hemispheres'
 * MEM 0 read every cycle, four MXM planes take an activation and emit their accumulators every
 * cycle), N cycles of it. FAMILY wse: the 25-point stencil (radius 4, 16 cells per PE) on all of
 * wse_32x32, N time steps.
 * Each runs without sampling, with sampling into 65,536-cycle windows (what --summary-png alone
 * uses), into 1,000-cycle windows with an empty frame callback, and with every frame rendered to
 * pixels (--frames without the PNG encoding), and (modes 4, 5) with the windows priced. Prints the best CPU time of REPEATS runs of each (the
 * modes take turns), and its ratio to the run without.
 *
 * usage: bench_activity [N] [REPEATS] [MODE] [FAMILY]   (MODE 0..5: run that one only, e.g.
 * under callgrind to count instructions; -1 all)
 */
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "arch/registry.h"
#include "arch/tsp/tsp.h"
#include "arch/wse/wse_kernels.h"
#include "bench/ipu_bsp_program.h"
#include "configs/builtin.h"
#include "core/activity.h"
#include "core/buf.h"
#include "core/energy.h"
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

/* The stream program of bench/bench_tsp_mxm, n cycles long. */
static ts_program *tsp_program(const void *c, int n)
{
    ts_program *p = ts_program_create("tsp");
    static int cur[1024];
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

int main(int argc, char **argv)
{
    const char *family = argc > 4 ? argv[4] : "ipu";
    bool ipu = !strcmp(family, "ipu"), tsp = !strcmp(family, "tsp"), wse = !strcmp(family, "wse");
    int steps = argc > 1 ? atoi(argv[1]) : ipu ? 30 : tsp ? 2000 : 4;
    int repeats = argc > 2 ? atoi(argv[2]) : 5;
    int only = argc > 3 ? atoi(argv[3]) : -1;
    if (steps < 1 || repeats < 1 || !(ipu || tsp || wse))
        return fprintf(stderr, "usage: bench_activity [N] [REPEATS] [MODE] [ipu|tsp|wse]\n"), 2;
    const ts_family *fam = ts_family_find(family);
    if (!fam)
        return fprintf(stderr, "bench_activity: the %s family is not built\n", family), 2;
    ts_err e;
    ts_err_init(&e);
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ts_config *cfg = NULL;
    if (ts_config_load(&cfg, ipu ? "ipu_mk1" : tsp ? "tsp_v1" : "wse_32x32", &co, &e) != TS_OK)
        return fail(&e);
    ts_program *p = NULL;
    if (ipu && ts_bench_ipu_bsp_program(steps, fam->isa, "bench_activity.s", &p, &e) != TS_OK)
        return fail(&e);
    if (tsp)
        p = tsp_program(ts_config_data(cfg), steps);
    if (wse && ts_wse_stencil_program(&p, 32, 32, 16, 4, (uint32_t)steps, true, &e) != TS_OK)
        return fail(&e);
    ts_energy_table *energy = NULL;
    if (ts_energy_load(&energy, ts_config_energy_table(cfg), ts_builtin_find, &e) != TS_OK)
        return fail(&e);
    static const struct {
        const char *name;
        uint64_t window;
        ts_act_frame_fn fn;
        bool priced; /* windows priced with the config's energy table */
    } modes[] = {
        {"no sampling", 0, NULL, false},
        {"sampling, 65536-cycle windows", 65536, NULL, false},
        {"sampling, 1000-cycle windows", 1000, empty, false},
        {"sampling, 1000-cycle frames rendered", 1000, render, false},
        {"sampling, 1000-cycle windows, priced", 1000, empty, true},
        {"sampling, 65536-cycle windows, priced", 65536, NULL, true},
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
            if (ts_sim_run(fam, cfg, p, &o, modes[k].priced ? energy : NULL, &r, &e) != TS_OK)
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
    printf("%s: %llu cycles (N = %d)\n", family, (unsigned long long)cycles, steps);
    ts_viz_image_free(&img);
    ts_program_destroy(p);
    ts_energy_destroy(energy);
    ts_config_destroy(cfg);
    return 0;
}
