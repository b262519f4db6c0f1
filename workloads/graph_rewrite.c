/* workloads/graph_rewrite.c — the rewrites a graph goes through when it is finalized: BatchNormalization
 * folded into the Conv before it, LayerNorm, Gelu and HardSwish recognised from their exported subgraphs,
 * dead nodes removed, nodes put in topological order, every shape inferred (ts_graph_finalize). */
#include "workloads/graph.h"

#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "workloads/graph_int.h"
#include "workloads/lower/fill.h"

/* ---------------------------------------------------------------------------------------------
 * Rewrites. */

/* Number of nodes (alive) reading tensor t; *first receives one of them. */
static int consumers(const ts_graph *g, int t, int *first)
{
    int c = 0;
    *first = -1;
    for (size_t i = 0; i < g->nn; i++) {
        if (g->dead[i])
            continue;
        for (size_t j = 0; j < g->n[i].nin; j++)
            if (g->n[i].in[j] == t) {
                if (*first < 0)
                    *first = (int)i;
                c++;
                break;
            }
    }
    return c;
}

static bool only_use(const ts_graph *g, int t, int node)
{
    int first;
    return !g->t[t].is_output && consumers(g, t, &first) == 1 && first == node;
}

/* Number of alive nodes reading t. */
static int uses(const ts_graph *g, int t)
{
    int first;
    return consumers(g, t, &first);
}

static const float *f32_data(const ts_graph *g, int t)
{
    return g->t[t].dtype == TS_DT_F32 ? g->t[t].data : NULL;
}

/* Fold BatchNormalization values into the Conv's weight and bias when the weight and bias are
 * this Conv's alone and any of the values is carried (all f32): with s = scale / sqrt(var + eps),
 * W'[m] = W[m] * s[m] and b'[m] = (b[m] - mean[m]) * s[m] + shift[m]. An operand without values
 * takes its fill values (workloads/lower/fill.h, by its id now), materialised, so the folded Conv
 * computes conv-then-BN exactly as a reference given those values does. When none is carried, the
 * Conv's values stay absent (it computes with its fill values). */
static ts_status fold_bn_values(ts_graph *g, int c, int bn, bool had_bias, ts_err *err)
{
    const ts_graph_node *conv = &g->n[c], *b = &g->n[bn];
    int w = conv->in[1], bias = conv->in[2];
    bool own = uses(g, w) == 1 && (!had_bias || uses(g, bias) == 1);
    if (!own)
        return TS_OK; /* shared: values stay as they are for the other readers */
    int ops[6] = {b->in[1], b->in[2], b->in[3], b->in[4], w, had_bias ? bias : -1};
    bool any = false, all_f32 = true;
    for (int k = 0; k < 6; k++)
        if (ops[k] >= 0) {
            any |= g->t[ops[k]].data != NULL;
            all_f32 &= g->t[ops[k]].dtype == TS_DT_F32;
        }
    if (!any || !all_f32) {
        ts_free((void *)(uintptr_t)g->t[w].data);
        g->t[w].data = NULL;
        ts_free((void *)(uintptr_t)g->t[bias].data);
        g->t[bias].data = NULL;
        return TS_OK;
    }
    for (int k = 0; k < 6; k++) { /* the missing operands' fill values */
        int t = ops[k];
        if (t < 0 || g->t[t].data)
            continue;
        int64_t n = ts_graph_tensor_elems(&g->t[t]);
        float *v = ts_malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v)
            return ts_err_set(err, TS_ENOMEM, "out of memory folding '%s'", b->name);
        for (int64_t i = 0; i < n; i++)
            v[i] = ts_fill_f32(t, (uint64_t)i);
        ts_status st = ts_graph_set_data(g, t, v, (size_t)n * sizeof *v, err);
        ts_free(v);
        if (st)
            return st;
    }
    const float *sc = f32_data(g, b->in[1]), *sh = f32_data(g, b->in[2]), *mean = f32_data(g, b->in[3]),
                *var = f32_data(g, b->in[4]), *wv = f32_data(g, w), *bv = had_bias ? f32_data(g, bias) : NULL;
    int64_t m = g->t[w].dims[0], per = ts_graph_tensor_elems(&g->t[w]) / (m ? m : 1);
    float *nb = ts_malloc((size_t)(m ? m : 1) * sizeof *nb);
    if (!nb)
        return ts_err_set(err, TS_ENOMEM, "out of memory folding '%s'", b->name);
    float *nw = (float *)(uintptr_t)wv;
    for (int64_t k = 0; k < m; k++) {
        double s = sc[k] / sqrt((double)var[k] + b->attrs.epsilon);
        for (int64_t j = 0; j < per; j++)
            nw[k * per + j] = (float)(nw[k * per + j] * s);
        nb[k] = (float)(((bv ? bv[k] : 0.0) - mean[k]) * s + sh[k]);
    }
    ts_status st = ts_graph_set_data(g, bias, nb, (size_t)m * sizeof *nb, err);
    ts_free(nb);
    return st;
}

static ts_status fold_batchnorm(ts_graph *g, ts_err *err)
{
    for (size_t i = 0; i < g->nn; i++) {
        ts_graph_node *bn = &g->n[i];
        if (g->dead[i] || bn->op != TS_OP_BATCHNORM)
            continue;
        int x = bn->in[0], c = g->t[x].producer;
        if (c < 0 || g->n[c].op != TS_OP_CONV || g->dead[c] || !only_use(g, x, (int)i))
            continue;
        ts_graph_node *conv = &g->n[c];
        bool had_bias = conv->nin >= 3;
        if (conv->nin < 3) {
            /* The folded convolution gets a bias of one value per output channel. */
            const ts_graph_tensor *w = &g->t[conv->in[1]];
            char base[480], name[512];
            snprintf(base, sizeof base, "%s.bias", conv->name);
            snprintf(name, sizeof name, "%s", base);
            if (ts_graph_find(g, name) >= 0)
                ts_graph_unique_name(g, base, name, sizeof name);
            int64_t m = w->dims[0];
            int b;
            ts_dtype dt = w->dtype;
            ts_status st = ts_graph_add_tensor(g, name, TS_TENSOR_WEIGHT, dt, 1, &m, &b, err);
            if (st)
                return st;
            conv = &g->n[c];
            int *ins = ts_realloc((void *)(uintptr_t)conv->in, 3 * sizeof *ins);
            if (!ins)
                return ts_err_set(err, TS_ENOMEM, "out of memory folding '%s'", g->n[i].name);
            ins[2] = b;
            conv->in = ins;
            conv->nin = 3;
        }
        ts_status st = fold_bn_values(g, c, (int)i, had_bias, err);
        if (st)
            return st;
        conv = &g->n[c];
        bn = &g->n[i];
        int y = bn->out[0];
        ((int *)(uintptr_t)conv->out)[0] = y;
        g->t[y].producer = c;
        g->t[x].producer = -1;
        g->dead[i] = true;
    }
    return TS_OK;
}

/* Value of a one-element float or integer constant; false if t is not one. */
static bool scalar_value(const ts_graph_tensor *t, double *v)
{
    if (!t->data || ts_graph_tensor_elems(t) != 1)
        return false;
    switch (t->dtype) {
    case TS_DT_F32: *v = *(const float *)t->data; return true;
    case TS_DT_F64: *v = *(const double *)t->data; return true;
    case TS_DT_I32: *v = *(const int32_t *)t->data; return true;
    case TS_DT_I64: *v = (double)*(const int64_t *)t->data; return true;
    default: return false;
    }
}

/* Producer of t if it is an alive node of op op; else -1. */
static int producer_op(const ts_graph *g, int t, ts_graph_op op)
{
    int p = g->t[t].producer;
    return p >= 0 && !g->dead[p] && g->n[p].op == op ? p : -1;
}

/* A reduce over the last axis only, keeping dims. */
static bool reduces_last(const ts_graph *g, int node)
{
    const ts_graph_node *nd = &g->n[node];
    const ts_graph_tensor *x = &g->t[nd->in[0]];
    return nd->attrs.naxes == 1 && nd->attrs.keepdims && x->rank > 0 &&
           ts_graph_norm_axis(nd->attrs.axes[0], x->rank) == x->rank - 1;
}

/* The other operand of a binary node, given one. */
static int other_in(const ts_graph_node *nd, int t)
{
    return nd->in[0] == t ? nd->in[1] : nd->in[0];
}

/* A weight or constant of shape [C] (or broadcasting to it) for the normalised axis. */
static bool is_param_vec(const ts_graph *g, int t, int64_t c)
{
    const ts_graph_tensor *p = &g->t[t];
    if (p->kind != TS_TENSOR_WEIGHT && p->kind != TS_TENSOR_CONST)
        return false;
    return p->rank == 1 && p->dims[0] == c;
}

/* Replace the dead-marked pattern's output producer by one new node of op over inputs ins. */
static ts_status replace_with(ts_graph *g, const int *dead, size_t ndead, ts_graph_op op, const char *name,
                              const int *ins, size_t nin, int y, const ts_graph_attrs *at, ts_err *err)
{
    for (size_t k = 0; k < ndead; k++) {
        if (dead[k] < 0)
            continue;
        g->dead[dead[k]] = true;
        for (size_t j = 0; j < g->n[dead[k]].nout; j++)
            g->t[g->n[dead[k]].out[j]].producer = -1;
    }
    if (ts_grow((void **)&g->dead, &g->capdead, g->nn + 1, sizeof *g->dead))
        return ts_err_set(err, TS_ENOMEM, "out of memory rewriting '%s'", name);
    int nid;
    ts_status st = ts_graph_add_node(g, op, name, ins, nin, &y, 1, at, &nid, err);
    if (st)
        return st;
    g->dead[nid] = false;
    return TS_OK;
}

int ts_graph_readers(const ts_graph *g, int t, int *first)
{
    return consumers(g, t, first);
}

ts_status ts_graph_replace(ts_graph *g, const int *dead, size_t ndead, ts_graph_op op, const char *name,
                           const int *ins, size_t nin, int y, const ts_graph_attrs *at, ts_err *err)
{
    return replace_with(g, dead, ndead, op, name, ins, nin, y, at, err);
}

/* Div(d, Sqrt(Add(ReduceMean(Pow(d, 2)), eps))) with d = Sub(x, ReduceMean(x)), then optional
 * Mul(scale) and Add(bias). Returns true and rewrites if node div starts one. */
static ts_status try_layernorm(ts_graph *g, int div, bool *done, ts_err *err)
{
    *done = false;
    ts_graph_node *nd = &g->n[div];
    int d = nd->in[0];
    int sq = producer_op(g, nd->in[1], TS_OP_SQRT);
    int sub = producer_op(g, d, TS_OP_SUB);
    if (sq < 0 || sub < 0 || !only_use(g, nd->in[1], div))
        return TS_OK;
    int add = producer_op(g, g->n[sq].in[0], TS_OP_ADD);
    if (add < 0 || !only_use(g, g->n[sq].in[0], sq))
        return TS_OK;
    int var_t = -1, eps_t = -1, rm2 = -1;
    for (int k = 0; k < 2 && rm2 < 0; k++) {
        int cand = g->n[add].in[k];
        rm2 = producer_op(g, cand, TS_OP_REDUCEMEAN);
        if (rm2 >= 0) {
            var_t = cand;
            eps_t = g->n[add].in[1 - k];
        }
    }
    double eps, two;
    if (rm2 < 0 || !scalar_value(&g->t[eps_t], &eps) || !only_use(g, var_t, add) || !reduces_last(g, rm2))
        return TS_OK;
    int pw = producer_op(g, g->n[rm2].in[0], TS_OP_POW);
    if (pw < 0 || !only_use(g, g->n[rm2].in[0], rm2) || g->n[pw].in[0] != d ||
        !scalar_value(&g->t[g->n[pw].in[1]], &two) || two != 2.0)
        return TS_OK;
    int x = g->n[sub].in[0];
    int rm1 = producer_op(g, g->n[sub].in[1], TS_OP_REDUCEMEAN);
    if (rm1 < 0 || g->n[rm1].in[0] != x || !reduces_last(g, rm1) || !only_use(g, g->n[sub].in[1], sub))
        return TS_OK;
    int first;
    if (g->t[d].is_output || consumers(g, d, &first) != 2)
        return TS_OK;
    const ts_graph_tensor *xt = &g->t[x];
    int64_t c = xt->dims[xt->rank - 1];
    /* Optional affine part. */
    int y = nd->out[0], scale = -1, bias = -1, mul = -1, badd = -1, n1;
    if (!g->t[y].is_output && consumers(g, y, &n1) == 1 && g->n[n1].op == TS_OP_MUL &&
        is_param_vec(g, other_in(&g->n[n1], y), c)) {
        mul = n1;
        scale = other_in(&g->n[n1], y);
        y = g->n[n1].out[0];
        if (!g->t[y].is_output && consumers(g, y, &n1) == 1 && g->n[n1].op == TS_OP_ADD &&
            is_param_vec(g, other_in(&g->n[n1], y), c)) {
            badd = n1;
            bias = other_in(&g->n[n1], y);
            y = g->n[n1].out[0];
        }
    }
    int dead[] = {rm1, sub, pw, rm2, add, sq, div, mul, badd};
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    at.axis = xt->rank - 1;
    at.epsilon = eps;
    int ins[3] = {x, scale, bias};
    size_t nin = scale < 0 ? 1 : bias < 0 ? 2 : 3;
    char lname[600];
    snprintf(lname, sizeof lname, "%s.layernorm", g->n[div].name);
    ts_status st =
        replace_with(g, dead, sizeof dead / sizeof dead[0], TS_OP_LAYERNORM, lname, ins, nin, y, &at, err);
    if (st)
        return st;
    *done = true;
    return TS_OK;
}

static ts_status recognise_layernorm(ts_graph *g, ts_err *err)
{
    size_t n = g->nn;
    for (size_t i = 0; i < n; i++) {
        if (g->dead[i] || g->n[i].op != TS_OP_DIV)
            continue;
        bool done;
        ts_status st = try_layernorm(g, (int)i, &done, err);
        if (st)
            return st;
    }
    return TS_OK;
}

/* GELU written out with erf, as exporters emit it: Mul(Mul(x, Add(Erf(Div(x, sqrt 2)), 1)), 0.5)
 * (or the Div as a Mul by 1/sqrt 2, and either operand order). */
static ts_status try_gelu(ts_graph *g, int erf, ts_err *err)
{
    const ts_graph_node *e = &g->n[erf];
    int d = e->in[0], dv = producer_op(g, d, TS_OP_DIV), ml = producer_op(g, d, TS_OP_MUL), first;
    double k;
    int x = -1, scale_node = dv >= 0 ? dv : ml;
    if (scale_node < 0 || !only_use(g, d, erf))
        return TS_OK;
    const ts_graph_node *sn = &g->n[scale_node];
    if (dv >= 0 && scalar_value(&g->t[sn->in[1]], &k) && fabs(k - 1.4142135623730951) < 1e-3)
        x = sn->in[0];
    else if (ml >= 0 && scalar_value(&g->t[sn->in[1]], &k) && fabs(k - 0.7071067811865476) < 1e-3)
        x = sn->in[0];
    else if (ml >= 0 && scalar_value(&g->t[sn->in[0]], &k) && fabs(k - 0.7071067811865476) < 1e-3)
        x = sn->in[1];
    int eo = e->out[0];
    if (x < 0 || g->t[eo].is_output || consumers(g, eo, &first) != 1 || g->n[first].op != TS_OP_ADD)
        return TS_OK;
    int add = first;
    if (!scalar_value(&g->t[other_in(&g->n[add], eo)], &k) || k != 1.0)
        return TS_OK;
    int ao = g->n[add].out[0];
    if (g->t[ao].is_output || consumers(g, ao, &first) != 1 || g->n[first].op != TS_OP_MUL ||
        other_in(&g->n[first], ao) != x)
        return TS_OK;
    int m1 = first, m1o = g->n[m1].out[0];
    if (g->t[m1o].is_output || consumers(g, m1o, &first) != 1 || g->n[first].op != TS_OP_MUL ||
        !scalar_value(&g->t[other_in(&g->n[first], m1o)], &k) || k != 0.5)
        return TS_OK;
    int m2 = first, y = g->n[m2].out[0];
    /* the result has x's shape only if the scalars did not broadcast it */
    if (g->t[y].rank != g->t[x].rank || memcmp(g->t[y].dims, g->t[x].dims, (size_t)g->t[x].rank * sizeof(int64_t)))
        return TS_OK;
    int dead[] = {scale_node, erf, add, m1, m2};
    char name[600];
    snprintf(name, sizeof name, "%s.gelu", g->n[erf].name);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    return replace_with(g, dead, sizeof dead / sizeof dead[0], TS_OP_GELU, name, &x, 1, y, &at, err);
}

static ts_status recognise_gelu(ts_graph *g, ts_err *err)
{
    size_t n = g->nn;
    for (size_t i = 0; i < n; i++) {
        if (g->dead[i] || g->n[i].op != TS_OP_ERF)
            continue;
        ts_status st = try_gelu(g, (int)i, err);
        if (st)
            return st;
    }
    return TS_OK;
}

/* The value of the scalar constant nd combines with t (the divisor for Div, either operand
 * otherwise); false if nd is not such a binary node of op. */
static bool scalar_with(const ts_graph *g, const ts_graph_node *nd, ts_graph_op op, int t, double *k)
{
    if (nd->op != op || nd->nin != 2 || (nd->in[0] != t && nd->in[1] != t) || (op == TS_OP_DIV && nd->in[0] != t))
        return false;
    return scalar_value(&g->t[other_in(nd, t)], k);
}

/* A node multiplying t by 1/6: Div by 6 or Mul by 1/6. */
static bool sixth_of(const ts_graph *g, int node, int t)
{
    double k;
    return (scalar_with(g, &g->n[node], TS_OP_DIV, t, &k) && fabs(k - 6.0) < 1e-6) ||
           (scalar_with(g, &g->n[node], TS_OP_MUL, t, &k) && fabs(k - 1.0 / 6.0) < 1e-6);
}

/* The only alive reader of t, -1 when t is an output or has none or several. */
static int sole_reader(const ts_graph *g, int t)
{
    int first;
    return !g->t[t].is_output && consumers(g, t, &first) == 1 ? first : -1;
}

/* HardSwish written out around Clip node c: x * Clip(x + 3, 0, 6) / 6 (the Div by 6 before or
 * after the Mul by x, or a Mul by 1/6), or x * Clip(x / 6 + 0.5, 0, 1) (HardSigmoid as the
 * importer brings it). */
static ts_status try_hardswish(ts_graph *g, int c, ts_err *err)
{
    const ts_graph_attrs *ca = &g->n[c].attrs;
    int u = g->n[c].in[0], add = producer_op(g, u, TS_OP_ADD), x = -1, pre = -1;
    double k;
    if (add < 0 || sole_reader(g, u) != c)
        return TS_OK;
    for (int j = 0; j < 2 && x < 0; j++) {
        int v = g->n[add].in[j];
        if (!scalar_with(g, &g->n[add], TS_OP_ADD, v, &k))
            continue;
        if (ca->min == 0 && ca->max == 6 && k == 3.0) {
            x = v;
        } else if (ca->min == 0 && ca->max == 1 && fabs(k - 0.5) < 1e-6 && g->t[v].producer >= 0 &&
                   sole_reader(g, v) == add) {
            int p = g->t[v].producer;
            for (int i = 0; i < 2 && x < 0 && !g->dead[p]; i++)
                if (g->n[p].nin == 2 && sixth_of(g, p, g->n[p].in[i]))
                    x = g->n[p].in[i];
            pre = x >= 0 ? p : -1;
        }
    }
    int co = g->n[c].out[0], r1 = x >= 0 ? sole_reader(g, co) : -1, r2 = -1, y = -1;
    if (r1 < 0)
        return TS_OK;
    if (pre >= 0) { /* x * HardSigmoid(x) */
        if (g->n[r1].op == TS_OP_MUL && g->n[r1].nin == 2 && other_in(&g->n[r1], co) == x)
            y = g->n[r1].out[0];
    } else if (g->n[r1].op == TS_OP_MUL && g->n[r1].nin == 2 && other_in(&g->n[r1], co) == x) {
        r2 = sole_reader(g, g->n[r1].out[0]); /* (x * clip) / 6 */
        y = r2 >= 0 && sixth_of(g, r2, g->n[r1].out[0]) ? g->n[r2].out[0] : -1;
    } else if (sixth_of(g, r1, co)) {
        r2 = sole_reader(g, g->n[r1].out[0]); /* x * (clip / 6) */
        y = r2 >= 0 && g->n[r2].op == TS_OP_MUL && g->n[r2].nin == 2 && other_in(&g->n[r2], g->n[r1].out[0]) == x
                ? g->n[r2].out[0]
                : -1;
    }
    /* the result has x's shape only if the scalars did not broadcast it */
    if (y < 0 || g->t[y].rank != g->t[x].rank ||
        memcmp(g->t[y].dims, g->t[x].dims, (size_t)g->t[x].rank * sizeof(int64_t)))
        return TS_OK;
    int dead[] = {pre, add, c, r1, r2};
    char name[600];
    snprintf(name, sizeof name, "%s.hardswish", g->n[c].name);
    ts_graph_attrs at;
    ts_graph_attrs_init(&at);
    return replace_with(g, dead, sizeof dead / sizeof dead[0], TS_OP_HARDSWISH, name, &x, 1, y, &at, err);
}

static ts_status recognise_hardswish(ts_graph *g, ts_err *err)
{
    size_t n = g->nn;
    for (size_t i = 0; i < n; i++) {
        if (g->dead[i] || g->n[i].op != TS_OP_CLIP)
            continue;
        ts_status st = try_hardswish(g, (int)i, err);
        if (st)
            return st;
    }
    return TS_OK;
}

/* Mark the nodes no output depends on as dead. */
static ts_status remove_dead(ts_graph *g, ts_err *err)
{
    bool any_out = false;
    for (size_t i = 0; i < g->nt; i++)
        any_out |= g->t[i].is_output;
    if (!any_out) {
        /* The outputs are the produced tensors that no alive node reads. */
        bool *read = ts_calloc(g->nt ? g->nt : 1, sizeof *read);
        if (!read)
            return ts_err_set(err, TS_ENOMEM, "out of memory removing dead nodes");
        for (size_t i = 0; i < g->nn; i++)
            if (!g->dead[i])
                for (size_t j = 0; j < g->n[i].nin; j++)
                    read[g->n[i].in[j]] = true;
        for (size_t i = 0; i < g->nn; i++)
            if (!g->dead[i])
                for (size_t j = 0; j < g->n[i].nout; j++)
                    if (!read[g->n[i].out[j]])
                        g->t[g->n[i].out[j]].is_output = true;
        ts_free(read);
    }
    bool *live = ts_calloc(g->nn ? g->nn : 1, sizeof *live);
    int *stack = ts_malloc((g->nn ? g->nn : 1) * sizeof *stack);
    if (!live || !stack) {
        ts_free(live);
        ts_free(stack);
        return ts_err_set(err, TS_ENOMEM, "out of memory removing dead nodes");
    }
    size_t sp = 0;
    for (size_t i = 0; i < g->nt; i++) {
        int p = g->t[i].producer;
        if (g->t[i].is_output && p >= 0 && !g->dead[p] && !live[p]) {
            live[p] = true;
            stack[sp++] = p;
        }
    }
    while (sp) {
        const ts_graph_node *nd = &g->n[stack[--sp]];
        for (size_t j = 0; j < nd->nin; j++) {
            int p = g->t[nd->in[j]].producer;
            if (p >= 0 && !g->dead[p] && !live[p]) {
                live[p] = true;
                stack[sp++] = p;
            }
        }
    }
    for (size_t i = 0; i < g->nn; i++)
        if (!live[i])
            g->dead[i] = true;
    ts_free(live);
    ts_free(stack);
    return TS_OK;
}

/* Min-heap of node ids, for a stable topological order. */
static void heap_push(int *h, size_t *n, int v)
{
    size_t i = (*n)++;
    while (i && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int heap_pop(int *h, size_t *n)
{
    int top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/* Drop dead nodes and unused tensors, renumber everything with nodes in topological order. */
static ts_status compact(ts_graph *g, ts_err *err)
{
    size_t nn = g->nn, nt = g->nt;
    int *indeg = ts_calloc(nn + 1, sizeof *indeg);
    int *heap = ts_malloc((nn + 1) * sizeof *heap);
    int *order = ts_malloc((nn + 1) * sizeof *order);
    int *tmap = ts_malloc((nt + 1) * sizeof *tmap);
    int *nmap = ts_malloc((nn + 1) * sizeof *nmap);
    /* consumers as CSR: for each tensor, the alive nodes reading it */
    int *cstart = ts_calloc(nt + 1, sizeof *cstart);
    size_t nedges = 0;
    for (size_t i = 0; i < nn; i++)
        if (!g->dead[i])
            nedges += g->n[i].nin;
    int *cnodes = ts_malloc((nedges + 1) * sizeof *cnodes);
    int *cfill = ts_calloc(nt + 1, sizeof *cfill);
    ts_graph_tensor *nt_arr = ts_malloc((nt + 1) * sizeof *nt_arr);
    ts_graph_node *nn_arr = ts_malloc((nn + 1) * sizeof *nn_arr);
    ts_status st = TS_OK;
    if (!indeg || !heap || !order || !tmap || !nmap || !cstart || !cnodes || !cfill || !nt_arr || !nn_arr) {
        st = ts_err_set(err, TS_ENOMEM, "out of memory ordering the graph");
        goto out;
    }
    for (size_t i = 0; i < nn; i++) {
        if (g->dead[i])
            continue;
        for (size_t j = 0; j < g->n[i].nin; j++) {
            int p = g->t[g->n[i].in[j]].producer;
            if (p >= 0 && !g->dead[p])
                indeg[i]++;
            cstart[g->n[i].in[j] + 1]++;
        }
    }
    for (size_t i = 0; i < nt; i++)
        cstart[i + 1] += cstart[i];
    for (size_t i = 0; i < nn; i++) {
        if (g->dead[i])
            continue;
        for (size_t j = 0; j < g->n[i].nin; j++) {
            int t = g->n[i].in[j];
            cnodes[cstart[t] + cfill[t]++] = (int)i;
        }
    }
    size_t hn = 0, no = 0, alive = 0;
    for (size_t i = 0; i < nn; i++)
        if (!g->dead[i]) {
            alive++;
            if (!indeg[i])
                heap_push(heap, &hn, (int)i);
        }
    while (hn) {
        int v = heap_pop(heap, &hn);
        order[no++] = v;
        for (size_t j = 0; j < g->n[v].nout; j++) {
            int t = g->n[v].out[j];
            for (int k = cstart[t]; k < cstart[t + 1]; k++)
                if (--indeg[cnodes[k]] == 0)
                    heap_push(heap, &hn, cnodes[k]);
        }
    }
    if (no != alive) {
        for (size_t i = 0; i < nn; i++)
            if (!g->dead[i] && indeg[i]) {
                st = ts_err_set(err, TS_EINPUT, "the graph has a cycle through node '%s'", g->n[i].name);
                goto out;
            }
    }
    /* Tensors kept: those alive nodes touch, and outputs. */
    for (size_t i = 0; i < nt; i++)
        tmap[i] = -1;
    for (size_t k = 0; k < no; k++) {
        const ts_graph_node *nd = &g->n[order[k]];
        for (size_t j = 0; j < nd->nin; j++)
            tmap[nd->in[j]] = 0;
        for (size_t j = 0; j < nd->nout; j++)
            tmap[nd->out[j]] = 0;
    }
    for (size_t i = 0; i < nt; i++)
        if (g->t[i].is_output && g->t[i].kind != TS_TENSOR_ACTIVATION)
            tmap[i] = 0;
    size_t ntk = 0;
    for (size_t i = 0; i < nt; i++) {
        if (tmap[i] < 0) {
            ts_free((void *)(uintptr_t)g->t[i].name);
            ts_free((void *)(uintptr_t)g->t[i].data);
            continue;
        }
        tmap[i] = (int)ntk;
        nt_arr[ntk++] = g->t[i];
    }
    for (size_t i = 0; i < nn; i++)
        nmap[i] = -1;
    for (size_t k = 0; k < no; k++)
        nmap[order[k]] = (int)k;
    for (size_t i = 0; i < nn; i++)
        if (nmap[i] < 0)
            ts_graph_free_node(&g->n[i]);
    for (size_t k = 0; k < no; k++) {
        ts_graph_node nd = g->n[order[k]];
        int *ins = (int *)(uintptr_t)nd.in, *outs = (int *)(uintptr_t)nd.out;
        for (size_t j = 0; j < nd.nin; j++)
            ins[j] = tmap[ins[j]];
        for (size_t j = 0; j < nd.nout; j++)
            outs[j] = tmap[outs[j]];
        nn_arr[k] = nd;
    }
    for (size_t i = 0; i < ntk; i++) {
        int p = nt_arr[i].producer;
        nt_arr[i].producer = p >= 0 ? nmap[p] : -1;
    }
    if (ntk)
        memcpy(g->t, nt_arr, ntk * sizeof *nt_arr);
    if (no)
        memcpy(g->n, nn_arr, no * sizeof *nn_arr);
    g->nt = ntk;
    g->nn = no;
    for (size_t i = 0; i < no; i++)
        g->dead[i] = false;
    if (ts_graph_rehash(g, g->hcap))
        st = ts_err_set(err, TS_ENOMEM, "out of memory ordering the graph");
out:
    ts_free(indeg);
    ts_free(heap);
    ts_free(order);
    ts_free(tmap);
    ts_free(nmap);
    ts_free(cstart);
    ts_free(cnodes);
    ts_free(cfill);
    ts_free(nt_arr);
    ts_free(nn_arr);
    return st;
}

static ts_status infer_all(ts_graph *g, ts_err *err)
{
    for (size_t i = 0; i < g->nt; i++) {
        const ts_graph_tensor *t = &g->t[i];
        if (t->producer < 0 && t->rank < 0)
            return ts_err_set(err, TS_EINPUT, "tensor '%s' has no shape and no node produces it", t->name);
    }
    for (size_t i = 0; i < g->nn; i++) {
        ts_status st = ts_graph_infer_node(g, (int)i, err);
        if (st)
            return st;
    }
    return TS_OK;
}

ts_status ts_graph_finalize(ts_graph *g, ts_err *err)
{
    ts_free(g->dead);
    g->capdead = g->nn ? g->nn : 1;
    g->dead = ts_calloc(g->capdead, sizeof *g->dead);
    if (!g->dead)
        return ts_err_set(err, TS_ENOMEM, "out of memory finalizing the graph");
    ts_status st = compact(g, err);
    if (!st)
        st = infer_all(g, err);
    if (!st)
        st = fold_batchnorm(g, err);
    if (!st)
        st = recognise_layernorm(g, err);
    if (!st)
        st = recognise_gelu(g, err);
    if (!st)
        st = recognise_hardswish(g, err);
    if (!st)
        st = ts_graph_simplify(g, err);
    if (!st)
        st = remove_dead(g, err);
    if (!st)
        st = compact(g, err);
    if (!st)
        st = infer_all(g, err);
    ts_free(g->dead);
    g->dead = NULL;
    g->capdead = 0;
    if (!st && ts_graph_build_consumers(g))
        st = ts_err_set(err, TS_ENOMEM, "out of memory finalizing the graph");
    return st;
}
