/* workloads/wse/lower_wse.c — graph to per-PE wafer-mesh programs, layer-pipelined: the passes
 * in order, and what they share (stages).
 *
 * See lower_wse.h for the contract and docs/lowering-wse.md for the placement, the routes and
 * colours, the per-PE programs and their costs. In short:
 *   1. the graph is read as a chain of stages (source, one or two stages per operator, sink),
 *      with at most one skip path open at a time (fork, FIFOs, optional projection, join); a
 *      Relu after a matrix product or a join is fused into it; Flatten and Reshape only rename
 *      (build: lower_wse_build.c, lower_wse_stages.c);
 *   2. stages are placed west to east along the top of the mesh, skip paths in the rows below;
 *      matrix products get the fewest PEs (kr x kc split of K and N) that keep up with the
 *      pipeline's time T, the smallest T for which everything fits (place: lower_wse_place.c);
 *      then every stage gets its colours and the skip paths their routes (lower_wse_routes.c);
 *   3. each PE's stream is emitted directly (routes first, then code), with its weights, the
 *      graph input or an operand as data segments (emit: lower_wse_emit*.c).
 * Every stream of activations carries one f32 per wavelet in a fixed order: the graph's
 * row-major order, except images of more than one pixel, which travel pixel by pixel (N, H, W,
 * C). A graph whose input is f16 gets binary16 matrix products (weights, MACs, partial sums:
 * lower_wse_emit_mm.c); the stream between stages stays binary32. */
#include "workloads/wse/lower_wse.h"

#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/wse/lower_wse_int.h"

const char *const ts_lww_kind_name[] = {
#define LW_KIND_NAME(k, name) name,
    LW_KINDS(LW_KIND_NAME)
#undef LW_KIND_NAME
};

lw_stage *ts_lww_add_stage(lw *L, int kind, int node)
{
    if (ts_grow((void **)&L->st, &L->cap, L->n + 1, sizeof *L->st))
        return NULL;
    lw_stage *s = &L->st[L->n++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node;
    s->prev = s->prev2 = -1;
    s->w = s->h = 1;
    return s;
}

int64_t ts_lww_rows(const ts_graph_tensor *t, int64_t *width)
{
    const int64_t W = t->rank ? t->dims[t->rank - 1] : 1;
    if (width)
        *width = W;
    return ts_graph_tensor_elems(t) / (W ? W : 1);
}

int64_t *ts_lww_new_rows(lw *L, int64_t n)
{
    int64_t *m = ts_malloc((size_t)(n ? n : 1) * sizeof *m);
    if (!m || ts_grow((void **)&L->maps, &L->capmaps, L->nmaps + 1, sizeof *L->maps)) {
        ts_free(m);
        return NULL;
    }
    L->maps[L->nmaps++] = m;
    return m;
}

bool ts_lww_same_rows(const int64_t *a, const int64_t *b, int64_t n)
{
    for (int64_t r = 0; r < n && (a || b); r++)
        if ((a ? a[r] : r) != (b ? b[r] : r))
            return false;
    return true;
}

static void free_stages(lw *L)
{
    for (size_t i = 0; i < L->nmaps; i++)
        ts_free(L->maps[i]);
    ts_free(L->maps);
    for (size_t i = 0; i < L->n; i++) {
        ts_free(L->st[i].wt);
        ts_free(L->st[i].bias);
        ts_free(L->st[i].vals);
        ts_free(L->st[i].cols);
        ts_free(L->st[i].cache);
    }
    ts_free(L->st);
}

/* The graph's one data input (a consumed input tensor) and one output. */
static ts_status find_io(const ts_graph *g, int *input, int *output, ts_err *err)
{
    *input = *output = -1;
    for (size_t t = 0; t < ts_graph_tensor_count(g); t++) {
        const ts_graph_tensor *T = ts_graph_get_tensor(g, (int)t);
        size_t nc = 0;
        ts_graph_consumers(g, (int)t, &nc);
        if (T->kind == TS_TENSOR_INPUT && nc) {
            if (*input >= 0)
                return ts_err_set(err, TS_EINPUT, "the graph has inputs '%s' and '%s'; the WSE lowering streams one",
                                  ts_graph_get_tensor(g, *input)->name, T->name);
            *input = (int)t;
        }
        if (T->is_output) {
            if (*output >= 0)
                return ts_err_set(err, TS_EINPUT, "the graph has outputs '%s' and '%s'; the WSE lowering keeps one",
                                  ts_graph_get_tensor(g, *output)->name, T->name);
            *output = (int)t;
        }
    }
    if (*input < 0 || *output < 0)
        return ts_err_set(err, TS_EINPUT, "the graph needs one data input and one output");
    const ts_graph_tensor *it = ts_graph_get_tensor(g, *input);
    if (it->dtype != TS_DT_F32 && it->dtype != TS_DT_F16)
        return ts_err_set(err, TS_EINPUT,
                          "input '%s' is %s; the WSE lowering supports f32 and f16 only (built-in workloads take "
                          "dtype=f32 or dtype=f16)", it->name, ts_dtype_name(it->dtype));
    return TS_OK;
}

/* The passes after build: place, colours and routes, then the program. */
static ts_status plan_and_emit(lw *L, uint32_t *hm, ts_program **out)
{
    lw_gen G = {0};
    ts_status rc = ts_lww_place(L, hm);
    if (!rc)
        ts_lww_colours(L);
    if (!rc && (rc = ts_lww_skip_routes(L, *hm, &G.pass, &G.npass)) == TS_ENOMEM)
        ts_err_set(L->err, TS_ENOMEM, "out of memory");
    ts_program *P = NULL;
    if (!rc && !(P = ts_program_create("wse")))
        rc = ts_err_set(L->err, TS_ENOMEM, "out of memory");
    if (!rc) {
        char desc[160];
        snprintf(desc, sizeof desc, "%s, layer-pipelined over %zu stages", ts_graph_name(L->g), L->n);
        P->workload = ts_strdup(desc);
    }
    if (!rc)
        rc = ts_lww_check(L, NULL); /* stages and queues before emission */
    if (!rc)
        rc = ts_lww_emit(L, P, &G);
    if (!rc)
        rc = ts_lww_check(L, P); /* and the routes emitted */
    ts_free(G.pass);
    if (rc)
        ts_program_destroy(P);
    else
        *out = P;
    return rc;
}

void ts_lower_wse_report_free(ts_lower_wse_report *rep)
{
    if (!rep)
        return;
    ts_free(rep->stages);
    ts_free(rep->out_rows);
    memset(rep, 0, sizeof *rep);
}

ts_status ts_lower_wse(const ts_graph *g, const ts_wse_target *t, ts_program **out, ts_lower_wse_report *rep,
                       ts_err *err)
{
    *out = NULL;
    if (rep)
        memset(rep, 0, sizeof *rep);
    if (t->colours < 8)
        return ts_err_set(err, TS_EINPUT, "the WSE lowering needs 8 colours, the config has %u", t->colours);
    if (!t->width || !t->height || t->sram_bytes < 64)
        return ts_err_set(err, TS_EINPUT, "the WSE lowering needs a mesh and SRAM");
    int input, output;
    ts_status rc = ts_lower_check_ops(g, &ts_lww_ops, err);
    if (!rc)
        rc = find_io(g, &input, &output, err);
    if (rc)
        return rc;
    lw L = {.g = g, .t = t, .err = err, .h16 = ts_graph_get_tensor(g, input)->dtype == TS_DT_F16};
    uint32_t hm = 0;
    ts_program *P = NULL;
    rc = ts_lww_build(&L, input, output);
    if (!rc)
        rc = plan_and_emit(&L, &hm, &P);
    if (!rc && rep)
        rc = ts_lww_report(&L, hm, output, rep);
    if (!rc && rep && ts_graph_get_tensor(g, input)->rank == 4)
        rep->batch = ts_graph_get_tensor(g, input)->dims[0];
    free_stages(&L);
    if (rc) {
        ts_program_destroy(P);
        if (rep)
            ts_lower_wse_report_free(rep);
        return rc;
    }
    *out = P;
    return TS_OK;
}
