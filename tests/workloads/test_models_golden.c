/* tests/workloads/test_models_golden.c — whole models under a cycle check: ResNet-50 lowered and
 * run on one config per family, its cycles, energy and a checksum of its output tensor compared
 * with a golden file, tests/golden/models/<model>_<family>[_full].txt. A schedule that changes by
 * one cycle, an energy that changes in its last digit or one output bit that flips fails the test.
 *
 *   test_models_golden FAMILY          the reduced size that runs in the normal suite
 *   test_models_golden FAMILY full     the full size (suite "slow"): runs only with TS_SLOW_TESTS=1,
 *                                      else exits 77 (skipped) saying so
 *
 * The model is lowered as `tessera run -c CONFIG MODEL` lowers it (the family's lowering with its
 * parameters from the config, default settings), with weights scaled so that the outputs stay
 * finite (scale_weights), and run in the fast mode on one thread as the kernel runs it
 * (tests/arch/arch_modes.h), priced with the config's energy table. The output values are read
 * from the chip's memory where the lowering reports them (as test_lower_<family>.c does).
 *
 * A change that is meant to move these figures rewrites the files with TS_UPDATE_GOLDEN=1 (see
 * docs/testing.md); the diff then shows what moved, and the commit says why. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch/ipu/ipu.h"
#include "arch/registry.h"
#include "arch/tsp/tsp.h"
#include "arch/wse/wse.h"
#include "arch/wse/wse_target.h"
#include "configs/builtin.h"
#include "core/alloc.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/energy.h"
#include "core/fileio.h"
#include "core/half.h"
#include "core/program.h"
#include "core/sim.h"
#include "tests/arch/arch_modes.h"
#include "tests/slow.h"
#include "workloads/graph.h"
#include "workloads/ipu/lower_ipu.h"
#include "workloads/lower/fill.h"
#include "workloads/tsp/lower_tsp.h"
#include "workloads/workload.h"
#include "workloads/wse/lower_wse.h"

/* One model on one config. */
typedef struct model_case {
    const char *family; /* the config's arch */
    const char *config; /* a built-in config */
    const char *model;  /* a workload spec, as `tessera run` takes it */
    const char *golden; /* file name under tests/golden/models/ */
} model_case;

/* The normal suite: sizes that run in a few seconds each in the debugoptimized build (the whole
 * ResNet-50 graph, every operator, on a smaller image). The WSE lowering takes f32 only. */
static const model_case reduced[] = {
    {"ipu", "ipu_mk1", "resnet50:size=32", "resnet50_ipu.txt"},
    {"tsp", "tsp_v1", "resnet50:size=64", "resnet50_tsp.txt"},
    {"wse", "wse2", "resnet50:size=16,dtype=f32", "resnet50_wse.txt"},
};

/* The slow suite: the full 224 x 224 image. */
static const model_case full[] = {
    {"ipu", "ipu_mk1", "resnet50", "resnet50_ipu_full.txt"},
    {"tsp", "tsp_v1", "resnet50", "resnet50_tsp_full.txt"},
    {"wse", "wse2", "resnet50:dtype=f32", "resnet50_wse_full.txt"},
};

static const model_case *the_case; /* chosen by main() */

/* ---- the output tensor ---- */

/* What is kept of the output: its element count, the sum of its values in element order and a
 * 64-bit FNV-1a hash of their bytes as the chip holds them (every bit counts). */
typedef struct checksum {
    const char *dtype; /* as the chip holds the values: "f32", "f16", "i8" */
    uint64_t n;
    uint64_t zeros, nonfinite; /* values equal to 0, values that are Inf or NaN (not in sum) */
    double sum;                /* of the finite values */
    double head[4];            /* the first values */
    uint64_t hash;
} checksum;

static void checksum_add(checksum *c, const void *bytes, size_t len, double value)
{
    const unsigned char *b = bytes;
    for (size_t i = 0; i < len; i++) {
        c->hash ^= b[i];
        c->hash *= UINT64_C(0x100000001b3);
    }
    if (c->n < 4)
        c->head[c->n] = value;
    if (!isfinite(value))
        c->nonfinite++;
    else
        c->sum += value;
    c->zeros += value == 0;
    c->n++;
}

/* The graph's one output. */
static int output_tensor(const ts_graph *g)
{
    int out = -1;
    for (size_t i = 0; i < ts_graph_tensor_count(g); i++)
        if (ts_graph_get_tensor(g, (int)i)->is_output) {
            ck_assert_msg(out < 0, "the model has more than one output");
            out = (int)i;
        }
    ck_assert_msg(out >= 0, "the model has no output");
    return out;
}

/* ---- the weights ---- */

/* The values the lowerings fill weights with (workloads/lower/fill.h: uniform in [-1, 1)) grow by
 * a factor of about sqrt(fan-in / 3) per layer: through 53 convolutions every float output is
 * Inf, NaN or 0, and a checksum of them would not see a wrong sum. For the float families the
 * graph carries the same values scaled by sqrt(3 / fan-in) (a variance of 1 / fan-in: LeCun's
 * uniform initialisation), biases by 1/10, so the logits stay finite (in f16 too) and depend on
 * every layer. The IPU's schedule does not depend on the values; the wafer's does (its Relu is a
 * branch per element), so its cycles are not those of `tessera run` with the unscaled fill. The
 * TSP computes in int8 from its own fill (a graph's float data is not int8 data), with a
 * requantisation after every product that keeps the values in range: its graph is left as it is. */
static void scale_weights(ts_graph *g)
{
    ts_err e;
    ts_err_init(&e);
    for (size_t id = 0; id < ts_graph_tensor_count(g); id++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)id);
        if (t->kind != TS_TENSOR_WEIGHT || t->data || t->rank < 1 ||
            (t->dtype != TS_DT_F32 && t->dtype != TS_DT_F16))
            continue;
        int64_t n = ts_graph_tensor_elems(t);
        double scale = t->rank == 1 ? 0.1 : sqrt(3.0 / (double)(n / t->dims[0]));
        size_t esz = ts_dtype_size(t->dtype);
        unsigned char *v = ts_malloc((size_t)n * esz);
        ck_assert_ptr_nonnull(v);
        for (int64_t i = 0; i < n; i++) {
            float f = (float)(ts_fill_f32((int)id, (uint64_t)i) * scale);
            if (t->dtype == TS_DT_F16) {
                uint16_t h = ts_f32_to_f16(f);
                memcpy(v + (size_t)i * 2, &h, 2);
            } else {
                memcpy(v + (size_t)i * 4, &f, 4);
            }
        }
        ck_assert_msg(ts_graph_set_data(g, (int)id, v, (size_t)n * esz, &e) == TS_OK, "%s", e.msg);
        ts_free(v);
    }
    ts_err_free(&e);
}

/* ---- lowering and reading back, per family ---- */

/* What one family's lowering leaves for reading the output back. */
typedef struct lowered {
    ts_program *prog;
    ts_lower_report ipu;
    ts_lower_tsp_report tsp;
    ts_lower_wse_report wse;
    uint32_t tsp_vl; /* the TSP's vector length in bytes */
} lowered;

static void lower(const char *family, const ts_config *cfg, const ts_graph *g, lowered *L)
{
    ts_err e;
    ts_err_init(&e);
    ts_status rc;
    if (!strcmp(family, "ipu")) {
        ts_lower_ipu_params p;
        ck_assert_msg(ts_lower_ipu_params_from_config(cfg, &p, &e) == TS_OK, "%s", e.msg);
        rc = ts_lower_ipu(g, &p, &L->prog, &L->ipu, &e);
    } else if (!strcmp(family, "tsp")) {
        ts_lower_tsp_params p;
        ck_assert_msg(ts_lower_tsp_params_from_config(cfg, &p, &e) == TS_OK, "%s", e.msg);
        L->tsp_vl = p.target.superlanes * p.target.lanes;
        rc = ts_lower_tsp(g, &p, &L->prog, &L->tsp, &e);
    } else {
        ts_wse_target t;
        ck_assert_msg(ts_wse_target_from_config(cfg, &t, &e) == TS_OK, "%s", e.msg);
        rc = ts_lower_wse(g, &t, &L->prog, &L->wse, &e);
    }
    ck_assert_msg(rc == TS_OK, "lower %s for %s: %s", the_case->model, the_case->config, e.msg);
    ts_err_free(&e);
}

static void lowered_free(lowered *L)
{
    ts_program_destroy(L->prog);
    ts_lower_report_free(&L->ipu);
    ts_lower_tsp_report_free(&L->tsp);
    ts_lower_wse_report_free(&L->wse);
}

/* The output's values after the run on model m. */
static checksum read_output(const char *family, ts_model *m, const ts_graph *g, const lowered *L)
{
    int out = output_tensor(g);
    const ts_graph_tensor *t = ts_graph_get_tensor(g, out);
    uint64_t n = (uint64_t)ts_graph_tensor_elems(t);
    checksum c = {.hash = UINT64_C(0xcbf29ce484222325)};
    ts_err e;
    ts_err_init(&e);
    if (!strcmp(family, "ipu")) {
        /* f16 values are held as halves or in f32 words (ts_lower_place.es) */
        uint32_t es = 0;
        for (size_t i = 0; i < L->ipu.nplaces; i++)
            if (L->ipu.places[i].tensor == out)
                es = L->ipu.places[i].es;
        ck_assert_msg(es == 2 || es == 4, "the output is not placed (element size %u)", es);
        bool half = es == 2;
        c.dtype = half ? "f16" : t->dtype == TS_DT_F16 ? "f16_in_f32_words" : "f32";
        for (uint64_t k = 0; k < n; k++) {
            uint32_t tile;
            uint64_t addr;
            ck_assert_int_eq(ts_lower_ipu_locate(&L->ipu, g, out, k, &tile, &addr), 0);
            unsigned char b[4];
            ck_assert_msg(ts_ipu_read(m, tile, addr, b, half ? 2 : 4, &e) == TS_OK, "%s", e.msg);
            uint16_t h;
            float f;
            if (half)
                memcpy(&h, b, 2), f = ts_f16_to_f32(h);
            else
                memcpy(&f, b, 4);
            checksum_add(&c, b, half ? 2 : 4, f);
        }
    } else if (!strcmp(family, "tsp")) {
        /* int8 values, element (row, column) of a [rows, columns] output at (pixel, channel) */
        ck_assert_int_eq(t->rank, 2);
        c.dtype = "i8";
        for (uint64_t k = 0; k < n; k++) {
            int slice;
            uint64_t addr;
            uint32_t row = (uint32_t)(k / (uint64_t)t->dims[1]), col = (uint32_t)(k % (uint64_t)t->dims[1]);
            ck_assert_int_eq(ts_lower_tsp_locate(&L->tsp, out, row, col, L->tsp_vl, &slice, &addr), 0);
            const uint8_t *mem = ts_tsp_mem(m, slice);
            ck_assert_ptr_nonnull(mem);
            int8_t v = (int8_t)mem[addr];
            checksum_add(&c, &v, 1, v);
        }
    } else {
        ck_assert_int_eq(L->wse.out_tensor, out);
        c.dtype = "f32";
        for (uint64_t k = 0; k < n; k++) {
            uint32_t x, y;
            uint64_t addr;
            ck_assert_int_eq(ts_lower_wse_locate(&L->wse, out, k, &x, &y, &addr), 0);
            float f;
            ck_assert_int_eq(ts_wse_read_sram(m, x, y, addr, &f, 4), 0);
            checksum_add(&c, &f, 4, f);
        }
    }
    ts_err_free(&e);
    return c;
}

/* ---- the golden file ---- */

static const char *golden_path(const char *name)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/golden/models/%s", root ? root : ".", name);
    return path;
}

/* Compare text with the golden file line by line, or rewrite the file when TS_UPDATE_GOLDEN=1. */
static void golden(const char *name, const ts_buf *text)
{
    const char *path = golden_path(name);
    ts_err e;
    ts_err_init(&e);
    const char *upd = getenv("TS_UPDATE_GOLDEN");
    if (upd && !strcmp(upd, "1")) {
        ck_assert_msg(ts_write_file_atomic(path, ts_buf_str(text), text->len, &e) == TS_OK, "%s", e.msg);
        fprintf(stderr, "%s: rewritten (TS_UPDATE_GOLDEN=1)\n", path);
        ts_err_free(&e);
        return;
    }
    char *want;
    size_t len;
    ck_assert_msg(ts_read_file(path, &want, &len, &e) == TS_OK, "%s: %s (TS_UPDATE_GOLDEN=1 writes it)", path, e.msg);
    if (len != text->len || memcmp(want, text->data, len)) {
        /* the first line that differs, both ways, then the whole text */
        const char *a = want, *b = ts_buf_str(text);
        while (*a && *a == *b) {
            a++;
            b++;
        }
        while (a > want && a[-1] != '\n')
            a--, b--;
        int la = (int)strcspn(a, "\n"), lb = (int)strcspn(b, "\n");
        ck_abort_msg("%s: %s differs from the golden file\n  golden: %.*s\n  now:    %.*s\nthe run gave:\n%s"
                     "(if the change is meant, TS_UPDATE_GOLDEN=1 rewrites the file: docs/testing.md)",
                     the_case->model, name, la, a, lb, b, ts_buf_str(text));
    }
    ts_free(want);
    ts_err_free(&e);
}

/* ---- the test ---- */

START_TEST(model_golden)
{
    const model_case *mc = the_case;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    ts_err e;
    ts_err_init(&e);
    const ts_family *fam = ts_family_find(mc->family);
    ck_assert_msg(fam != NULL, "the registry has no family '%s'", mc->family);
    ts_config *cfg = NULL;
    ts_config_opts co = {.schema = ts_registry_schema, .builtin = ts_builtin_find};
    ck_assert_msg(ts_config_load(&cfg, mc->config, &co, &e) == TS_OK, "config %s: %s", mc->config, e.msg);
    ts_energy_table *energy = NULL;
    ck_assert_msg(ts_energy_load(&energy, ts_config_energy_table(cfg), ts_builtin_find, &e) == TS_OK, "%s", e.msg);
    ts_graph *g = NULL;
    ck_assert_msg(ts_wl_load_model(mc->model, NULL, NULL, &g, &e) == TS_OK, "%s: %s", mc->model, e.msg);

    if (strcmp(mc->family, "tsp"))
        scale_weights(g);
    lowered L = {0};
    lower(mc->family, cfg, g, &L);
    arch_opts o = {.run = {.max_cycles = TS_SIM_DEFAULT_MAX_CYCLES}, .energy = energy};
    arch_run r;
    arch_run_mode(fam, cfg, L.prog, &o, false, 1, &r);
    ck_assert_msg(r.rc == TS_OK, "run %s on %s: %s: %s", mc->model, mc->config, r.stage, r.errline);
    checksum c = read_output(mc->family, r.m, g, &L);

    ts_buf text = TS_BUF_INIT;
    ts_buf_printf(&text, "model %s\nconfig %s\nweights %s\n", mc->model, mc->config,
                  strcmp(mc->family, "tsp") ? "fill x sqrt(3 / fan-in), biases fill x 0.1" : "int8 fill");
    ts_buf_printf(&text, "cycles %llu\n", (unsigned long long)r.r.cycles);
    ts_buf_printf(&text, "energy_table %s\nenergy_j %.17g\n", r.r.energy_table, r.r.energy_j);
    ts_buf_printf(&text, "output %s %s %llu\n", ts_graph_get_tensor(g, output_tensor(g))->name, c.dtype,
                  (unsigned long long)c.n);
    ts_buf_printf(&text, "output_head %.9g %.9g %.9g %.9g\n", c.head[0], c.head[1], c.head[2], c.head[3]);
    ts_buf_printf(&text, "output_zeros %llu\noutput_nonfinite %llu\noutput_sum %.17g\noutput_fnv1a64 %016llx\n",
                  (unsigned long long)c.zeros, (unsigned long long)c.nonfinite, c.sum, (unsigned long long)c.hash);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fprintf(stderr, "%s on %s: %llu cycles, %.3f s of host time\n", mc->model, mc->config,
            (unsigned long long)r.r.cycles, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    golden(mc->golden, &text);

    ts_buf_free(&text);
    arch_run_free(&r);
    lowered_free(&L);
    ts_graph_destroy(g);
    ts_energy_destroy(energy);
    ts_config_destroy(cfg);
    ts_err_free(&e);
}
END_TEST

int main(int argc, char **argv)
{
    const char *family = argc > 1 ? argv[1] : "";
    bool slow = argc > 2 && !strcmp(argv[2], "full");
    const model_case *cases = slow ? full : reduced;
    for (size_t i = 0; i < sizeof reduced / sizeof reduced[0]; i++)
        if (!strcmp(cases[i].family, family))
            the_case = &cases[i];
    if (!the_case) {
        fprintf(stderr, "usage: test_models_golden ipu|tsp|wse [full]\n");
        return EXIT_FAILURE;
    }
    if (slow) {
        char what[160];
        snprintf(what, sizeof what, "%s on %s at full size", the_case->model, the_case->config);
        if (slow_skipped(what))
            return 77;
        printf("running the full-size %s on %s (TS_SLOW_TESTS=1)\n", the_case->model, the_case->config);
        fflush(stdout);
    }
    Suite *s = suite_create("models_golden");
    TCase *tc = tcase_create(family);
    tcase_set_timeout(tc, slow ? 3600 : 120);
    tcase_add_test(tc, model_golden);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    if (slow)
        printf("ran the full-size %s on %s: %s\n", the_case->model, the_case->config,
               failed ? "failed" : "passed");
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
