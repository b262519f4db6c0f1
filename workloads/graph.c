/* workloads/graph.c — graph IR storage, shape inference and totals (the rewrites of finalize: graph_rewrite.c). */
#include "workloads/graph.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "core/alloc.h"
#include "core/fileio.h"
#include "core/limit.h"
#include "workloads/graph_int.h"

/* ---------------------------------------------------------------------------------------------
 * Dtypes and ops. */

static const struct { const char *name; size_t size; } dtypes[TS_DT_COUNT] = {
    [TS_DT_UNDEF] = {"undef", 0}, [TS_DT_F32] = {"f32", 4}, [TS_DT_F16] = {"f16", 2},
    [TS_DT_BF16] = {"bf16", 2},   [TS_DT_F64] = {"f64", 8}, [TS_DT_I8] = {"i8", 1},
    [TS_DT_U8] = {"u8", 1},       [TS_DT_I16] = {"i16", 2}, [TS_DT_I32] = {"i32", 4},
    [TS_DT_I64] = {"i64", 8},     [TS_DT_BOOL] = {"bool", 1},
};

size_t ts_dtype_size(ts_dtype dt)
{
    return (unsigned)dt < TS_DT_COUNT ? dtypes[dt].size : 0;
}

const char *ts_dtype_name(ts_dtype dt)
{
    return (unsigned)dt < TS_DT_COUNT ? dtypes[dt].name : "?";
}

int ts_dtype_parse(const char *s, ts_dtype *out)
{
    static const struct { const char *alias; ts_dtype dt; } aliases[] = {
        {"fp32", TS_DT_F32},   {"float32", TS_DT_F32}, {"float", TS_DT_F32},  {"fp16", TS_DT_F16},
        {"float16", TS_DT_F16}, {"half", TS_DT_F16},   {"bfloat16", TS_DT_BF16}, {"fp64", TS_DT_F64},
        {"float64", TS_DT_F64}, {"int8", TS_DT_I8},    {"uint8", TS_DT_U8},   {"int16", TS_DT_I16},
        {"int32", TS_DT_I32},  {"int64", TS_DT_I64},
    };
    for (int i = 1; i < TS_DT_COUNT; i++)
        if (!strcmp(s, dtypes[i].name)) {
            *out = (ts_dtype)i;
            return 0;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(s, aliases[i].alias)) {
            *out = aliases[i].dt;
            return 0;
        }
    return -1;
}

bool ts_dtype_is_float(ts_dtype dt)
{
    return dt == TS_DT_F32 || dt == TS_DT_F16 || dt == TS_DT_BF16 || dt == TS_DT_F64;
}

static const char *const op_names[TS_OP_COUNT] = {
#define TS_GRAPH_OP_NAME(e, n) n,
    TS_GRAPH_OPS(TS_GRAPH_OP_NAME)
#undef TS_GRAPH_OP_NAME
};

const char *ts_graph_op_name(ts_graph_op op)
{
    return (unsigned)op < TS_OP_COUNT ? op_names[op] : "?";
}

int ts_graph_op_parse(const char *name, ts_graph_op *out)
{
    for (int i = 0; i < TS_OP_COUNT; i++)
        if (!strcmp(name, op_names[i])) {
            *out = (ts_graph_op)i;
            return 0;
        }
    return -1;
}

const char *ts_tensor_kind_name(ts_tensor_kind k)
{
    switch (k) {
    case TS_TENSOR_ACTIVATION: return "activation";
    case TS_TENSOR_INPUT: return "input";
    case TS_TENSOR_WEIGHT: return "weight";
    case TS_TENSOR_CONST: return "const";
    }
    return "?";
}

void ts_graph_attrs_init(ts_graph_attrs *a)
{
    memset(a, 0, sizeof *a);
    a->strides[0] = a->strides[1] = 1;
    a->dilations[0] = a->dilations[1] = 1;
    a->group = 1;
    a->alpha = a->beta = 1.0;
    a->keepdims = true;
    a->epsilon = 1e-5;
    a->min = -INFINITY;
    a->max = INFINITY;
    a->to = TS_DT_UNDEF;
}

/* ---------------------------------------------------------------------------------------------
 * Storage. */


static void drop_consumers(ts_graph *g)
{
    ts_free(g->cstart);
    ts_free(g->cnodes);
    g->cstart = g->cnodes = NULL;
}

/* Consumer lists as CSR, nodes in ascending order; 0 on success. */
int ts_graph_build_consumers(ts_graph *g)
{
    drop_consumers(g);
    size_t ne = 0;
    for (size_t i = 0; i < g->nn; i++)
        ne += g->n[i].nin;
    g->cstart = ts_calloc(g->nt + 1, sizeof *g->cstart);
    g->cnodes = ts_malloc((ne ? ne : 1) * sizeof *g->cnodes);
    int *fill = ts_calloc(g->nt + 1, sizeof *fill);
    if (!g->cstart || !g->cnodes || !fill) {
        ts_free(fill);
        drop_consumers(g);
        return -1;
    }
    for (size_t i = 0; i < g->nn; i++)
        for (size_t j = 0; j < g->n[i].nin; j++) {
            bool dup = false; /* a node reading a tensor twice counts once */
            for (size_t k = 0; k < j && !dup; k++)
                dup = g->n[i].in[k] == g->n[i].in[j];
            if (!dup)
                g->cstart[g->n[i].in[j] + 1]++;
        }
    for (size_t t = 0; t < g->nt; t++)
        g->cstart[t + 1] += g->cstart[t];
    for (size_t i = 0; i < g->nn; i++)
        for (size_t j = 0; j < g->n[i].nin; j++) {
            bool dup = false;
            for (size_t k = 0; k < j && !dup; k++)
                dup = g->n[i].in[k] == g->n[i].in[j];
            int t = g->n[i].in[j];
            if (!dup)
                g->cnodes[g->cstart[t] + fill[t]++] = (int)i;
        }
    ts_free(fill);
    return 0;
}

const int *ts_graph_consumers(const ts_graph *g, int tensor, size_t *n)
{
    *n = 0;
    if (!g->cstart || tensor < 0 || (size_t)tensor >= g->nt)
        return NULL;
    *n = (size_t)(g->cstart[tensor + 1] - g->cstart[tensor]);
    return g->cnodes + g->cstart[tensor];
}

static uint64_t hash_str(const char *s)
{
    return ts_fnv1a(TS_FNV_SEED, s, strlen(s));
}

int ts_graph_rehash(ts_graph *g, size_t cap)
{
    int *h = ts_malloc(cap * sizeof *h);
    if (!h)
        return -1;
    for (size_t i = 0; i < cap; i++)
        h[i] = -1;
    for (size_t id = 0; id < g->nt; id++) {
        size_t j = (size_t)hash_str(g->t[id].name) & (cap - 1);
        while (h[j] >= 0)
            j = (j + 1) & (cap - 1);
        h[j] = (int)id;
    }
    ts_free(g->hash);
    g->hash = h;
    g->hcap = cap;
    return 0;
}

ts_graph *ts_graph_create(const char *name)
{
    ts_graph *g = ts_calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->name = ts_strdup(name ? name : "graph");
    if (!g->name || ts_graph_rehash(g, 64)) {
        ts_graph_destroy(g);
        return NULL;
    }
    return g;
}

void ts_graph_free_node(ts_graph_node *n)
{
    ts_free((void *)(uintptr_t)n->name);
    ts_free((void *)(uintptr_t)n->in);
    ts_free((void *)(uintptr_t)n->out);
}

void ts_graph_destroy(ts_graph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nt; i++) {
        ts_free((void *)(uintptr_t)g->t[i].name);
        ts_free((void *)(uintptr_t)g->t[i].data);
    }
    for (size_t i = 0; i < g->nn; i++)
        ts_graph_free_node(&g->n[i]);
    ts_free(g->t);
    ts_free(g->n);
    ts_free(g->dead);
    ts_free(g->hash);
    ts_free(g->name);
    drop_consumers(g);
    ts_free(g);
}

const char *ts_graph_name(const ts_graph *g)
{
    return g->name;
}

void ts_graph_set_llm(ts_graph *g, const ts_graph_llm *llm) { g->llm = *llm; }

const ts_graph_llm *ts_graph_llm_of(const ts_graph *g) { return &g->llm; }

size_t ts_graph_tensor_count(const ts_graph *g)
{
    return g->nt;
}

size_t ts_graph_node_count(const ts_graph *g)
{
    return g->nn;
}

const ts_graph_tensor *ts_graph_get_tensor(const ts_graph *g, int id)
{
    return id >= 0 && (size_t)id < g->nt ? &g->t[id] : NULL;
}

const ts_graph_node *ts_graph_get_node(const ts_graph *g, int id)
{
    return id >= 0 && (size_t)id < g->nn ? &g->n[id] : NULL;
}

int ts_graph_find(const ts_graph *g, const char *name)
{
    size_t j = (size_t)hash_str(name) & (g->hcap - 1);
    while (g->hash[j] >= 0) {
        if (!strcmp(g->t[g->hash[j]].name, name))
            return g->hash[j];
        j = (j + 1) & (g->hcap - 1);
    }
    return -1;
}

int64_t ts_graph_tensor_elems(const ts_graph_tensor *t)
{
    if (t->rank < 0)
        return 0;
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* Shapes are bounded so element counts and byte sizes never overflow 64 bits. */
#define MAX_ELEMS (INT64_C(1) << 50)

static bool shape_ok(int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0 || dims[i] > MAX_ELEMS)
            return false;
        if (__builtin_mul_overflow(n, dims[i], &n) || n > MAX_ELEMS)
            return false;
    }
    return true;
}

/* The tensor limits of core/limit.h: "" when t's shape is within them, else what is too large
 * ("has 2000000000 elements, more than the limit of 268435456 (raise it with ...)"). */
static bool over_limit(ts_dtype dt, int rank, const int64_t *dims, char *why, size_t n)
{
    if (rank < 0)
        return false;
    uint64_t elems = 1, max_elems = ts_limit(TS_LIMIT_TENSOR_ELEMS), max_bytes = ts_limit(TS_LIMIT_TENSOR_BYTES);
    for (int i = 0; i < rank; i++)
        elems *= (uint64_t)dims[i]; /* shape_ok holds: at most 2^50 */
    uint64_t bytes = elems * ts_dtype_size(dt);
    if (elems > max_elems)
        snprintf(why, n, "has %" PRIu64 " elements, more than the limit of %" PRIu64 " " TS_LIMIT_HINT_FMT,
                 elems, max_elems, ts_limit_name(TS_LIMIT_TENSOR_ELEMS));
    else if (bytes > max_bytes)
        snprintf(why, n, "has %" PRIu64 " bytes, more than the limit of %" PRIu64 " " TS_LIMIT_HINT_FMT, bytes,
                 max_bytes, ts_limit_name(TS_LIMIT_TENSOR_BYTES));
    else
        return false;
    return true;
}

ts_status ts_graph_add_tensor(ts_graph *g, const char *name, ts_tensor_kind kind, ts_dtype dtype,
                              int rank, const int64_t *dims, int *id, ts_err *err)
{
    char why[256];
    if (!name || !*name)
        return ts_err_set(err, TS_EINPUT, "tensor without a name");
    if (rank > TS_GRAPH_MAX_RANK)
        return ts_err_set(err, TS_EINPUT, "tensor '%s' has rank %d, more than the %d supported", name,
                          rank, TS_GRAPH_MAX_RANK);
    for (int i = 0; i < rank; i++)
        if (dims[i] < 0)
            return ts_err_set(err, TS_EINPUT, "tensor '%s' has a negative dimension %lld", name,
                              (long long)dims[i]);
    if (!shape_ok(rank, dims))
        return ts_err_set(err, TS_EINPUT, "tensor '%s' has more than 2^50 elements", name);
    if (over_limit(dtype, rank, dims, why, sizeof why))
        return ts_err_set(err, TS_EINPUT, "tensor '%s' %s", name, why);
    if (ts_graph_find(g, name) >= 0)
        return ts_err_set(err, TS_EINPUT, "tensor '%s' is defined twice", name);
    if (g->nt >= INT32_MAX / 2)
        return ts_err_set(err, TS_EINPUT, "too many tensors");
    if (ts_grow((void **)&g->t, &g->capt, g->nt + 1, sizeof *g->t))
        return ts_err_set(err, TS_ENOMEM, "out of memory adding tensor '%s'", name);
    if ((g->nt + 1) * 2 > g->hcap && ts_graph_rehash(g, g->hcap * 2))
        return ts_err_set(err, TS_ENOMEM, "out of memory adding tensor '%s'", name);
    char *nm = ts_strdup(name);
    if (!nm)
        return ts_err_set(err, TS_ENOMEM, "out of memory adding tensor '%s'", name);
    drop_consumers(g);
    ts_graph_tensor *t = &g->t[g->nt];
    memset(t, 0, sizeof *t);
    t->name = nm;
    t->kind = kind;
    t->dtype = dtype;
    t->rank = rank < 0 ? -1 : rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->producer = -1;
    size_t j = (size_t)hash_str(name) & (g->hcap - 1);
    while (g->hash[j] >= 0)
        j = (j + 1) & (g->hcap - 1);
    g->hash[j] = (int)g->nt;
    if (id)
        *id = (int)g->nt;
    g->nt++;
    return TS_OK;
}

ts_status ts_graph_set_data(ts_graph *g, int id, const void *data, size_t nbytes, ts_err *err)
{
    ts_graph_tensor *t = &g->t[id];
    int64_t n = ts_graph_tensor_elems(t);
    if (t->rank < 0 || (uint64_t)n * ts_dtype_size(t->dtype) != nbytes)
        return ts_err_set(err, TS_EINPUT, "tensor '%s' has %zu bytes of values, its shape needs %llu",
                          t->name, nbytes, (unsigned long long)((uint64_t)n * ts_dtype_size(t->dtype)));
    void *p = ts_malloc(nbytes ? nbytes : 1);
    if (!p)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the values of '%s'", t->name);
    if (nbytes)
        memcpy(p, data, nbytes);
    ts_free((void *)(uintptr_t)t->data);
    t->data = p;
    return TS_OK;
}

void ts_graph_set_kind(ts_graph *g, int id, ts_tensor_kind kind)
{
    g->t[id].kind = kind;
}

void ts_graph_mark_output(ts_graph *g, int id)
{
    g->t[id].is_output = true;
}

ts_status ts_graph_add_node(ts_graph *g, ts_graph_op op, const char *name, const int *in, size_t nin,
                            const int *out, size_t nout, const ts_graph_attrs *attrs, int *id,
                            ts_err *err)
{
    char gen[64];
    if (!name || !*name) {
        snprintf(gen, sizeof gen, "%s_%zu", ts_graph_op_name(op), g->nn);
        name = gen;
    }
    if ((unsigned)op >= TS_OP_COUNT)
        return ts_err_set(err, TS_EINTERNAL, "node '%s' has an unknown op %d", name, (int)op);
    for (size_t i = 0; i < nin; i++)
        if (in[i] < 0 || (size_t)in[i] >= g->nt)
            return ts_err_set(err, TS_EINTERNAL, "node '%s' reads tensor id %d, which does not exist",
                              name, in[i]);
    for (size_t i = 0; i < nout; i++) {
        if (out[i] < 0 || (size_t)out[i] >= g->nt)
            return ts_err_set(err, TS_EINTERNAL, "node '%s' writes tensor id %d, which does not exist",
                              name, out[i]);
        if (g->t[out[i]].producer >= 0 || g->t[out[i]].kind != TS_TENSOR_ACTIVATION)
            return ts_err_set(err, TS_EINPUT, "node '%s' writes '%s', which already has a value", name,
                              g->t[out[i]].name);
    }
    if (g->nn >= ts_limit(TS_LIMIT_GRAPH_NODES))
        return ts_err_set(err, TS_EINPUT, "node '%s' is one more than the limit of %" PRIu64 " operators "
                          TS_LIMIT_HINT_FMT, name, ts_limit(TS_LIMIT_GRAPH_NODES),
                          ts_limit_name(TS_LIMIT_GRAPH_NODES));
    if (ts_grow((void **)&g->n, &g->capn, g->nn + 1, sizeof *g->n))
        return ts_err_set(err, TS_ENOMEM, "out of memory adding node '%s'", name);
    ts_graph_node *n = &g->n[g->nn];
    memset(n, 0, sizeof *n);
    char *nm = ts_strdup(name);
    int *ins = ts_malloc((nin ? nin : 1) * sizeof *ins);
    int *outs = ts_malloc((nout ? nout : 1) * sizeof *outs);
    if (!nm || !ins || !outs) {
        ts_free(nm);
        ts_free(ins);
        ts_free(outs);
        return ts_err_set(err, TS_ENOMEM, "out of memory adding node '%s'", name);
    }
    if (nin)
        memcpy(ins, in, nin * sizeof *ins);
    if (nout)
        memcpy(outs, out, nout * sizeof *outs);
    drop_consumers(g);
    n->op = op;
    n->name = nm;
    n->in = ins;
    n->nin = nin;
    n->out = outs;
    n->nout = nout;
    if (attrs)
        n->attrs = *attrs;
    else
        ts_graph_attrs_init(&n->attrs);
    for (size_t i = 0; i < nout; i++)
        g->t[out[i]].producer = (int)g->nn;
    if (id)
        *id = (int)g->nn;
    g->nn++;
    return TS_OK;
}

int ts_graph_unique_name(ts_graph *g, const char *base, char *buf, size_t n)
{
    for (;;) {
        snprintf(buf, n, "%s_%d", base, g->uniq++);
        if (ts_graph_find(g, buf) < 0)
            return 0;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Shape inference. */

#define NODE_ERR(g, nd, ...) node_err(err, nd, __VA_ARGS__)

static ts_status node_err(ts_err *err, const ts_graph_node *nd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static ts_status node_err(ts_err *err, const ts_graph_node *nd, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ts_err_set(err, TS_EINPUT, "node '%s' (%s): %s", nd->name, ts_graph_op_name(nd->op), what);
}

/* "[1,3,224,224]" */
void ts_graph_shape_str(const ts_graph_tensor *t, char *buf, size_t n)
{
    size_t k = 0;
    k += (size_t)snprintf(buf + k, n - k, "[");
    for (int i = 0; i < t->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)t->dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

static void set_shape(ts_graph_tensor *t, ts_dtype dt, int rank, const int64_t *dims)
{
    t->dtype = dt;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
}

/* Numpy broadcasting of a and b into out; -1 if incompatible. */
int ts_graph_broadcast(int ra, const int64_t *a, int rb, const int64_t *b, int *ro, int64_t *out)
{
    int r = ra > rb ? ra : rb;
    for (int i = 0; i < r; i++) {
        int64_t da = i < r - ra ? 1 : a[i - (r - ra)];
        int64_t db = i < r - rb ? 1 : b[i - (r - rb)];
        if (da != db && da != 1 && db != 1)
            return -1;
        out[i] = da == 1 ? db : da;
    }
    *ro = r;
    return 0;
}

int64_t ts_graph_norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

/* Output size of a sliding window along one axis. */
static int64_t window_out(int64_t in, int64_t k, int64_t s, int64_t p0, int64_t p1, int64_t d, bool ceil_mode)
{
    int64_t span = in + p0 + p1 - d * (k - 1) - 1;
    if (span < 0 || s <= 0)
        return -1;
    int64_t o = ceil_mode ? (span + s - 1) / s + 1 : span / s + 1;
    /* ONNX: with ceil_mode the last window must start inside the input or left padding */
    if (ceil_mode && (o - 1) * s >= in + p0)
        o--;
    return o;
}

static ts_status infer_window(ts_graph *g, ts_graph_node *nd, const ts_graph_tensor *x, int64_t kh, int64_t kw,
                              int64_t cout, ts_err *err)
{
    const ts_graph_attrs *a = &nd->attrs;
    int64_t o[4] = {x->dims[0], cout, 0, 0};
    int64_t k[2] = {kh, kw};
    const int64_t lim = INT64_C(1) << 31;
    for (int i = 0; i < 2; i++)
        if (k[i] > lim || a->strides[i] > lim || a->dilations[i] > lim || a->pads[i] > lim ||
            a->pads[2 + i] > lim || a->strides[i] < 1 || a->dilations[i] < 1 || a->pads[i] < 0 ||
            a->pads[2 + i] < 0)
            return NODE_ERR(g, nd, "window attributes out of range");
    for (int i = 0; i < 2; i++) {
        o[2 + i] = window_out(x->dims[2 + i], k[i], a->strides[i], a->pads[i], a->pads[2 + i],
                              a->dilations[i], a->ceil_mode);
        if (o[2 + i] <= 0)
            return NODE_ERR(g, nd, "window %lldx%lld with stride %lld does not fit input %s %lldx%lld",
                            (long long)kh, (long long)kw, (long long)a->strides[i],
                            x->name, (long long)x->dims[2], (long long)x->dims[3]);
    }
    set_shape(&g->t[nd->out[0]], x->dtype, 4, o);
    return TS_OK;
}

static ts_status infer_node(ts_graph *g, int id, ts_err *err);

ts_status ts_graph_infer_node(ts_graph *g, int id, ts_err *err)
{
    ts_status st = infer_node(g, id, err);
    if (st)
        return st;
    const ts_graph_node *nd = &g->n[id];
    for (size_t i = 0; i < nd->nout; i++) {
        const ts_graph_tensor *t = &g->t[nd->out[i]];
        if (t->rank >= 0 && !shape_ok(t->rank, t->dims))
            return NODE_ERR(g, nd, "output '%s' has more than 2^50 elements", t->name);
        char why[256];
        if (over_limit(t->dtype, t->rank, t->dims, why, sizeof why))
            return NODE_ERR(g, nd, "output '%s' %s", t->name, why);
    }
    /* A dimension of 0 (an empty tensor) has nothing to compute and no lowering places it: a
     * 0 x 0 kernel or a [4, 0] weight would divide by zero in a plan. The YAML reader refuses
     * such shapes where they are written; ONNX models are checked here, node by node. */
    for (size_t i = 0; i < nd->nin + nd->nout; i++) {
        bool out = i >= nd->nin;
        const ts_graph_tensor *t = &g->t[out ? nd->out[i - nd->nin] : nd->in[i]];
        for (int k = 0; k < t->rank; k++)
            if (t->dims[k] == 0) {
                char s[160];
                ts_graph_shape_str(t, s, sizeof s);
                return NODE_ERR(g, nd, "%s '%s' has shape %s: dimensions must be positive",
                                out ? "output" : "input", t->name, s);
            }
    }
    return TS_OK;
}

static ts_status infer_node(ts_graph *g, int id, ts_err *err)
{
    ts_graph_node *nd = &g->n[id];
    ts_graph_attrs *a = &nd->attrs;
    const ts_graph_tensor *in[8] = {0};
    char s0[160], s1[160];
    if (nd->nout < 1)
        return NODE_ERR(g, nd, "no output");
    for (size_t i = 0; i < nd->nin && i < 8; i++) {
        in[i] = &g->t[nd->in[i]];
        if (in[i]->rank < 0)
            return NODE_ERR(g, nd, "input '%s' has no known shape", in[i]->name);
    }
    size_t need = 1;
    switch (nd->op) {
    case TS_OP_CONV: case TS_OP_GEMM: case TS_OP_MATMUL: case TS_OP_ADD: case TS_OP_SUB:
    case TS_OP_MUL: case TS_OP_DIV: case TS_OP_POW: case TS_OP_GATHER:
        need = 2;
        break;
    case TS_OP_BATCHNORM:
        need = 5;
        break;
    default:
        break;
    }
    if (nd->nin < need)
        return NODE_ERR(g, nd, "needs %zu inputs, has %zu", need, nd->nin);
    ts_graph_tensor *y = &g->t[nd->out[0]];
    const ts_graph_tensor *x = in[0];
    int64_t d[TS_GRAPH_MAX_RANK];
    int r;
    switch (nd->op) {
    case TS_OP_CONV: {
        const ts_graph_tensor *w = in[1];
        if (x->rank != 4)
            return NODE_ERR(g, nd, "only 2-d convolutions are supported, input '%s' has rank %d", x->name,
                            x->rank);
        if (w->rank != 4)
            return NODE_ERR(g, nd, "weight '%s' has rank %d, want 4", w->name, w->rank);
        if (a->group < 1 || x->dims[1] % a->group || w->dims[0] % a->group)
            return NODE_ERR(g, nd, "group %lld does not divide %lld input and %lld output channels",
                            (long long)a->group, (long long)x->dims[1], (long long)w->dims[0]);
        int64_t cin;
        if (__builtin_mul_overflow(w->dims[1], a->group, &cin) || cin != x->dims[1])
            return NODE_ERR(g, nd,
                            "weight '%s' expects %lld input channels per group, input has %lld in %lld groups",
                            w->name, (long long)w->dims[1], (long long)x->dims[1], (long long)a->group);
        if ((a->kernel[0] && a->kernel[0] != w->dims[2]) || (a->kernel[1] && a->kernel[1] != w->dims[3]))
            return NODE_ERR(g, nd, "kernel_shape %lldx%lld does not match weight '%s'",
                            (long long)a->kernel[0], (long long)a->kernel[1], w->name);
        a->kernel[0] = w->dims[2];
        a->kernel[1] = w->dims[3];
        if (nd->nin > 2 && (in[2]->rank != 1 || in[2]->dims[0] != w->dims[0]))
            return NODE_ERR(g, nd, "bias '%s' must have shape [%lld]", in[2]->name, (long long)w->dims[0]);
        return infer_window(g, nd, x, w->dims[2], w->dims[3], w->dims[0], err);
    }
    case TS_OP_MAXPOOL:
    case TS_OP_AVGPOOL:
        if (x->rank != 4)
            return NODE_ERR(g, nd, "only 2-d pooling is supported, input '%s' has rank %d", x->name, x->rank);
        if (a->kernel[0] < 1 || a->kernel[1] < 1)
            return NODE_ERR(g, nd, "kernel_shape is missing");
        return infer_window(g, nd, x, a->kernel[0], a->kernel[1], x->dims[1], err);
    case TS_OP_GLOBALAVGPOOL:
        if (x->rank < 3)
            return NODE_ERR(g, nd, "input '%s' has rank %d, want at least 3", x->name, x->rank);
        for (int i = 0; i < x->rank; i++)
            d[i] = i < 2 ? x->dims[i] : 1;
        set_shape(y, x->dtype, x->rank, d);
        return TS_OK;
    case TS_OP_GEMM: {
        const ts_graph_tensor *b = in[1];
        if (x->rank != 2 || b->rank != 2)
            return NODE_ERR(g, nd, "inputs must be matrices, got rank %d and %d", x->rank, b->rank);
        int64_t m = a->trans_a ? x->dims[1] : x->dims[0], k = a->trans_a ? x->dims[0] : x->dims[1];
        int64_t k2 = a->trans_b ? b->dims[1] : b->dims[0], n = a->trans_b ? b->dims[0] : b->dims[1];
        if (k != k2) {
            ts_graph_shape_str(x, s0, sizeof s0);
            ts_graph_shape_str(b, s1, sizeof s1);
            return NODE_ERR(g, nd, "inner dimensions differ: %s x %s (transA %d, transB %d)", s0, s1,
                            a->trans_a, a->trans_b);
        }
        d[0] = m;
        d[1] = n;
        if (nd->nin > 2) {
            int rr;
            int64_t dd[TS_GRAPH_MAX_RANK];
            if (ts_graph_broadcast(in[2]->rank, in[2]->dims, 2, d, &rr, dd) || rr != 2 || dd[0] != m ||
                dd[1] != n) {
                ts_graph_shape_str(in[2], s0, sizeof s0);
                return NODE_ERR(g, nd, "bias '%s' %s does not broadcast to [%lld,%lld]", in[2]->name, s0,
                                (long long)m, (long long)n);
            }
        }
        set_shape(y, x->dtype, 2, d);
        return TS_OK;
    }
    case TS_OP_MATMUL: {
        const ts_graph_tensor *b = in[1];
        if (x->rank < 1 || b->rank < 1)
            return NODE_ERR(g, nd, "matmul of a scalar");
        int64_t ad[TS_GRAPH_MAX_RANK], bd[TS_GRAPH_MAX_RANK];
        int ra = x->rank, rb = b->rank;
        memcpy(ad, x->dims, sizeof ad);
        memcpy(bd, b->dims, sizeof bd);
        if (ra == 1) { ad[1] = ad[0]; ad[0] = 1; ra = 2; }
        if (rb == 1) { bd[1] = 1; rb = 2; }
        if (ad[ra - 1] != bd[rb - 2]) {
            ts_graph_shape_str(x, s0, sizeof s0);
            ts_graph_shape_str(b, s1, sizeof s1);
            return NODE_ERR(g, nd, "inner dimensions differ: %s x %s", s0, s1);
        }
        int rbatch;
        if (ts_graph_broadcast(ra - 2, ad, rb - 2, bd, &rbatch, d)) {
            ts_graph_shape_str(x, s0, sizeof s0);
            ts_graph_shape_str(b, s1, sizeof s1);
            return NODE_ERR(g, nd, "batch dimensions do not broadcast: %s x %s", s0, s1);
        }
        r = rbatch;
        if (x->rank > 1)
            d[r++] = ad[ra - 2];
        if (b->rank > 1)
            d[r++] = bd[rb - 1];
        set_shape(y, x->dtype, r, d);
        return TS_OK;
    }
    case TS_OP_ADD: case TS_OP_SUB: case TS_OP_MUL: case TS_OP_DIV: case TS_OP_POW:
        if (ts_graph_broadcast(x->rank, x->dims, in[1]->rank, in[1]->dims, &r, d)) {
            ts_graph_shape_str(x, s0, sizeof s0);
            ts_graph_shape_str(in[1], s1, sizeof s1);
            return NODE_ERR(g, nd, "shapes %s and %s do not broadcast", s0, s1);
        }
        set_shape(y, x->dtype, r, d);
        return TS_OK;
    case TS_OP_SQRT: case TS_OP_RELU: case TS_OP_CLIP: case TS_OP_HARDSWISH: case TS_OP_SIGMOID:
    case TS_OP_TANH: case TS_OP_ERF: case TS_OP_GELU:
        set_shape(y, x->dtype, x->rank, x->dims);
        return TS_OK;
    case TS_OP_CAST:
        set_shape(y, a->to ? a->to : x->dtype, x->rank, x->dims);
        return TS_OK;
    case TS_OP_SOFTMAX: {
        int64_t ax = ts_graph_norm_axis(a->axis, x->rank);
        if (ax < 0 || ax >= x->rank)
            return NODE_ERR(g, nd, "axis %lld is out of range for rank %d", (long long)a->axis, x->rank);
        set_shape(y, x->dtype, x->rank, x->dims);
        return TS_OK;
    }
    case TS_OP_BATCHNORM:
        if (x->rank < 2)
            return NODE_ERR(g, nd, "input '%s' has rank %d, want at least 2", x->name, x->rank);
        for (int i = 1; i < 5; i++)
            if (in[i]->rank != 1 || in[i]->dims[0] != x->dims[1])
                return NODE_ERR(g, nd, "'%s' must have shape [%lld]", in[i]->name, (long long)x->dims[1]);
        set_shape(y, x->dtype, x->rank, x->dims);
        return TS_OK;
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM: { /* RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale, one output */
        if (nd->op == TS_OP_RMSNORM && (nd->nin != 2 || nd->nout != 1))
            return NODE_ERR(g, nd, "takes an input and a scale, and gives one output");
        int64_t ax = ts_graph_norm_axis(a->axis, x->rank);
        if (ax < 0 || ax >= x->rank)
            return NODE_ERR(g, nd, "axis %lld is out of range for rank %d", (long long)a->axis, x->rank);
        for (size_t i = 1; i < nd->nin; i++) {
            int rr;
            int64_t dd[TS_GRAPH_MAX_RANK];
            if (ts_graph_broadcast(x->rank - (int)ax, x->dims + ax, in[i]->rank, in[i]->dims, &rr, dd) ||
                rr != x->rank - ax || memcmp(dd, x->dims + ax, (size_t)rr * sizeof *dd)) {
                ts_graph_shape_str(in[i], s0, sizeof s0);
                return NODE_ERR(g, nd, "'%s' %s does not match the normalised axes", in[i]->name, s0);
            }
        }
        set_shape(y, x->dtype, x->rank, x->dims);
        for (size_t i = 1; i < nd->nout; i++) { /* Mean and InvStdDev outputs, if asked for */
            int64_t dd[TS_GRAPH_MAX_RANK];
            for (int j = 0; j < x->rank; j++)
                dd[j] = j < ax ? x->dims[j] : 1;
            set_shape(&g->t[nd->out[i]], TS_DT_F32, x->rank, dd);
        }
        return TS_OK;
    }
    case TS_OP_REDUCEMEAN: {
        bool red[TS_GRAPH_MAX_RANK] = {0};
        if (a->naxes == 0)
            for (int i = 0; i < x->rank; i++)
                red[i] = true;
        for (int i = 0; i < a->naxes; i++) {
            int64_t ax = ts_graph_norm_axis(a->axes[i], x->rank);
            if (ax < 0 || ax >= x->rank)
                return NODE_ERR(g, nd, "axis %lld is out of range for rank %d", (long long)a->axes[i], x->rank);
            red[ax] = true;
        }
        r = 0;
        for (int i = 0; i < x->rank; i++) {
            if (!red[i])
                d[r++] = x->dims[i];
            else if (a->keepdims)
                d[r++] = 1;
        }
        set_shape(y, x->dtype, r, d);
        return TS_OK;
    }
    case TS_OP_RESHAPE: {
        int64_t n = 1;
        if (!shape_ok(a->nshape, a->shape))
            return NODE_ERR(g, nd, "target shape out of range");
        for (int i = 0; i < a->nshape; i++)
            n *= a->shape[i];
        if (n != ts_graph_tensor_elems(x)) {
            ts_graph_shape_str(x, s0, sizeof s0);
            return NODE_ERR(g, nd, "cannot reshape %s (%lld elements) to %lld elements", s0,
                            (long long)ts_graph_tensor_elems(x), (long long)n);
        }
        set_shape(y, x->dtype, a->nshape, a->shape);
        return TS_OK;
    }
    case TS_OP_EXPAND:
        if (ts_graph_broadcast(x->rank, x->dims, a->nshape, a->shape, &r, d)) {
            ts_graph_shape_str(x, s0, sizeof s0);
            return NODE_ERR(g, nd, "cannot expand %s to the given shape", s0);
        }
        set_shape(y, x->dtype, r, d);
        return TS_OK;
    case TS_OP_TRANSPOSE: {
        if (a->nperm == 0) {
            a->nperm = x->rank;
            for (int i = 0; i < x->rank; i++)
                a->perm[i] = x->rank - 1 - i;
        }
        if (a->nperm != x->rank)
            return NODE_ERR(g, nd, "perm has %d entries, input has rank %d", a->nperm, x->rank);
        bool seen[TS_GRAPH_MAX_RANK] = {0};
        for (int i = 0; i < x->rank; i++) {
            int64_t p = a->perm[i];
            if (p < 0 || p >= x->rank || seen[p])
                return NODE_ERR(g, nd, "perm is not a permutation of 0..%d", x->rank - 1);
            seen[p] = true;
            d[i] = x->dims[p];
        }
        set_shape(y, x->dtype, x->rank, d);
        return TS_OK;
    }
    case TS_OP_FLATTEN: {
        int64_t ax = ts_graph_norm_axis(a->axis, x->rank);
        if (ax < 0 || ax > x->rank)
            return NODE_ERR(g, nd, "axis %lld is out of range for rank %d", (long long)a->axis, x->rank);
        d[0] = d[1] = 1;
        for (int i = 0; i < x->rank; i++)
            d[i < ax ? 0 : 1] *= x->dims[i];
        set_shape(y, x->dtype, 2, d);
        return TS_OK;
    }
    case TS_OP_CONCAT: {
        int64_t ax = ts_graph_norm_axis(a->axis, x->rank);
        if (ax < 0 || ax >= x->rank)
            return NODE_ERR(g, nd, "axis %lld is out of range for rank %d", (long long)a->axis, x->rank);
        memcpy(d, x->dims, sizeof d);
        for (size_t i = 1; i < nd->nin; i++) {
            const ts_graph_tensor *t = &g->t[nd->in[i]];
            if (t->rank < 0)
                return NODE_ERR(g, nd, "input '%s' has no known shape", t->name);
            bool ok = t->rank == x->rank;
            for (int j = 0; ok && j < x->rank; j++)
                ok = j == ax || t->dims[j] == x->dims[j];
            if (!ok) {
                ts_graph_shape_str(x, s0, sizeof s0);
                ts_graph_shape_str(t, s1, sizeof s1);
                return NODE_ERR(g, nd, "cannot concatenate %s and %s on axis %lld", s0, s1, (long long)ax);
            }
            d[ax] += t->dims[ax];
        }
        set_shape(y, x->dtype, x->rank, d);
        return TS_OK;
    }
    case TS_OP_SLICE: {
        if (a->nslice == 0) {
            a->nslice = x->rank;
            for (int i = 0; i < x->rank; i++) {
                a->starts[i] = 0;
                a->ends[i] = x->dims[i];
                a->steps[i] = 1;
            }
        }
        if (a->nslice != x->rank)
            return NODE_ERR(g, nd, "slice covers %d axes, input has rank %d", a->nslice, x->rank);
        for (int i = 0; i < x->rank; i++) {
            int64_t st = a->steps[i];
            if (st == 0)
                return NODE_ERR(g, nd, "step 0 on axis %d", i);
            if (a->starts[i] < -1 || a->starts[i] > x->dims[i] || a->ends[i] < -1 || a->ends[i] > x->dims[i] ||
                st < -MAX_ELEMS || st > MAX_ELEMS)
                return NODE_ERR(g, nd, "slice bounds out of range on axis %d", i);
            int64_t n = st > 0 ? (a->ends[i] - a->starts[i] + st - 1) / st
                               : (a->starts[i] - a->ends[i] - st - 1) / -st;
            d[i] = n > 0 ? n : 0;
        }
        set_shape(y, x->dtype, x->rank, d);
        return TS_OK;
    }
    case TS_OP_GATHER: {
        const ts_graph_tensor *ix = in[1];
        int64_t ax = ts_graph_norm_axis(a->axis, x->rank);
        if (ax < 0 || ax >= x->rank)
            return NODE_ERR(g, nd, "axis %lld is out of range for rank %d", (long long)a->axis, x->rank);
        if (x->rank - 1 + ix->rank > TS_GRAPH_MAX_RANK)
            return NODE_ERR(g, nd, "output rank exceeds %d", TS_GRAPH_MAX_RANK);
        r = 0;
        for (int i = 0; i < ax; i++)
            d[r++] = x->dims[i];
        for (int i = 0; i < ix->rank; i++)
            d[r++] = ix->dims[i];
        for (int i = (int)ax + 1; i < x->rank; i++)
            d[r++] = x->dims[i];
        set_shape(y, x->dtype, r, d);
        return TS_OK;
    }
    case TS_OP_COUNT:
        break;
    }
    return NODE_ERR(g, nd, "no shape rule");
}

/* ---------------------------------------------------------------------------------------------
 * MACs and totals. */

uint64_t ts_graph_node_macs(const ts_graph *g, int id)
{
    const ts_graph_node *nd = &g->n[id];
    const ts_graph_tensor *y = &g->t[nd->out[0]];
    if (y->rank < 0)
        return 0;
    switch (nd->op) {
    case TS_OP_CONV: {
        const ts_graph_tensor *w = &g->t[nd->in[1]];
        /* every output element takes (C/group)*kh*kw products */
        return (uint64_t)ts_graph_tensor_elems(y) * (uint64_t)(w->dims[1] * w->dims[2] * w->dims[3]);
    }
    case TS_OP_GEMM: {
        const ts_graph_tensor *a = &g->t[nd->in[0]];
        int64_t k = nd->attrs.trans_a ? a->dims[0] : a->dims[1];
        return (uint64_t)ts_graph_tensor_elems(y) * (uint64_t)k;
    }
    case TS_OP_MATMUL: {
        const ts_graph_tensor *a = &g->t[nd->in[0]];
        return (uint64_t)ts_graph_tensor_elems(y) * (uint64_t)a->dims[a->rank - 1];
    }
    default:
        return 0;
    }
}

void ts_graph_get_totals(const ts_graph *g, ts_graph_totals *o)
{
    memset(o, 0, sizeof *o);
    bool *used = ts_calloc(g->nt ? g->nt : 1, sizeof *used);
    o->nodes = g->nn;
    for (size_t i = 0; i < g->nn; i++) {
        const ts_graph_node *nd = &g->n[i];
        o->nodes_by_op[nd->op]++;
        o->macs += ts_graph_node_macs(g, (int)i);
        if (used) {
            for (size_t j = 0; j < nd->nin; j++)
                used[nd->in[j]] = true;
            for (size_t j = 0; j < nd->nout; j++)
                used[nd->out[j]] = true;
        }
    }
    for (size_t i = 0; i < g->nt; i++) {
        const ts_graph_tensor *t = &g->t[i];
        if (used && !used[i] && !t->is_output)
            continue;
        uint64_t bytes = (uint64_t)ts_graph_tensor_elems(t) * ts_dtype_size(t->dtype);
        switch (t->kind) {
        case TS_TENSOR_WEIGHT:
            o->params += (uint64_t)ts_graph_tensor_elems(t);
            o->param_bytes += bytes;
            break;
        case TS_TENSOR_INPUT:
            o->input_bytes += bytes;
            o->activation_bytes += bytes;
            break;
        case TS_TENSOR_ACTIVATION:
            o->activation_bytes += bytes;
            break;
        case TS_TENSOR_CONST:
            break;
        }
        if (t->is_output)
            o->output_bytes += bytes;
    }
    ts_free(used);
}
