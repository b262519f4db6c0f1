/* workloads/onnx.c — ONNX import (see workloads/onnx.h for the rules). */
#include "workloads/onnx.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/fileio.h"
#include "workloads/graph_int.h"
#include "workloads/onnx.pb-c.h"

/* Folding evaluates at most this many elements per constant. */
#define FOLD_MAX_ELEMS 65536

bool ts_onnx_available(void)
{
    return true;
}

/* ---------------------------------------------------------------------------------------------
 * protobuf-c allocations through the project's hook. */

static void *pb_alloc(void *data, size_t size)
{
    void *p = ts_malloc(size ? size : 1);
    if (!p)
        *(bool *)data = true;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    ts_free(p);
}


/* ---------------------------------------------------------------------------------------------
 * Import state. */

typedef struct alias { char *name; int id; } alias;

typedef struct imp {
    ts_graph *g;
    const char *file;
    int64_t opset;
    alias *al;
    size_t nal, capal;
    bool oom; /* an allocation for folding failed: report TS_ENOMEM whatever else went wrong */
    const char *dims; /* values of symbolic dimensions, borrowed from the options */
    const ts_onnx_hook *hook; /* borrowed, may be NULL */
    ts_err *err;
} imp;

static int lookup(const imp *im, const char *name)
{
    int id = ts_graph_find(im->g, name);
    if (id >= 0)
        return id;
    for (size_t i = 0; i < im->nal; i++)
        if (!strcmp(im->al[i].name, name))
            return im->al[i].id;
    return -1;
}

static ts_status add_alias(imp *im, const char *name, int id)
{
    if (lookup(im, name) >= 0)
        return ts_err_set(im->err, TS_EINPUT, "tensor '%s' is defined twice", name);
    if (ts_grow((void **)&im->al, &im->capal, im->nal + 1, sizeof *im->al))
        return ts_err_set(im->err, TS_ENOMEM, "out of memory");
    im->al[im->nal].name = ts_strdup(name);
    if (!im->al[im->nal].name)
        return ts_err_set(im->err, TS_ENOMEM, "out of memory");
    im->al[im->nal++].id = id;
    return TS_OK;
}

static ts_status node_err(imp *im, const Onnx__NodeProto *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static ts_status node_err(imp *im, const Onnx__NodeProto *n, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ts_err_set(im->err, TS_EINPUT, "node '%s' (%s): %s", n->name && *n->name ? n->name : "?",
                      n->op_type ? n->op_type : "?", what);
}

static ts_dtype onnx_dtype(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return TS_DT_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return TS_DT_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return TS_DT_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return TS_DT_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return TS_DT_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return TS_DT_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return TS_DT_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return TS_DT_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return TS_DT_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return TS_DT_BF16;
    default: return TS_DT_UNDEF;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Values: integer tensors as int64, floating ones as double, for folding. */

typedef struct val {
    ts_dtype dt;
    int rank;
    int64_t dims[TS_GRAPH_MAX_RANK];
    int64_t n;
    int64_t *i; /* integer and bool dtypes */
    double *f;  /* floating dtypes */
} val;

static bool dt_int(ts_dtype dt)
{
    return dt == TS_DT_I8 || dt == TS_DT_U8 || dt == TS_DT_I16 || dt == TS_DT_I32 || dt == TS_DT_I64 ||
           dt == TS_DT_BOOL;
}

static void val_free(val *v)
{
    ts_free(v->i);
    ts_free(v->f);
    v->i = NULL;
    v->f = NULL;
}

static int val_alloc(imp *im, val *v, ts_dtype dt, int rank, const int64_t *dims)
{
    memset(v, 0, sizeof *v);
    v->dt = dt;
    v->rank = rank;
    v->n = 1;
    for (int k = 0; k < rank; k++) {
        v->dims[k] = dims[k];
        if (dims[k] < 0 || __builtin_mul_overflow(v->n, dims[k], &v->n) || v->n > FOLD_MAX_ELEMS)
            return -1;
    }
    if (dt_int(dt))
        v->i = ts_calloc((size_t)(v->n ? v->n : 1), sizeof *v->i);
    else
        v->f = ts_calloc((size_t)(v->n ? v->n : 1), sizeof *v->f);
    if (v->i || v->f)
        return 0;
    im->oom = true;
    return -1;
}

static double half_to_double(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double s = (h & 0x8000) ? -1 : 1;
    if (e == 0)
        return s * ldexp(m, -24);
    if (e == 31)
        return m ? NAN : s * INFINITY;
    return s * ldexp(m + 1024, e - 25);
}

/* Decode raw little-endian bytes of dt into v (allocated by the caller). */
static void decode(val *v, const uint8_t *p)
{
    for (int64_t k = 0; k < v->n; k++) {
        switch (v->dt) {
        case TS_DT_F32: { float x; memcpy(&x, p + 4 * k, 4); v->f[k] = x; break; }
        case TS_DT_F64: { double x; memcpy(&x, p + 8 * k, 8); v->f[k] = x; break; }
        case TS_DT_F16: { uint16_t x; memcpy(&x, p + 2 * k, 2); v->f[k] = half_to_double(x); break; }
        case TS_DT_BF16: {
            uint16_t x; float y; uint32_t u;
            memcpy(&x, p + 2 * k, 2);
            u = (uint32_t)x << 16;
            memcpy(&y, &u, 4);
            v->f[k] = y;
            break;
        }
        case TS_DT_I8: v->i[k] = (int8_t)p[k]; break;
        case TS_DT_U8: case TS_DT_BOOL: v->i[k] = p[k]; break;
        case TS_DT_I16: { int16_t x; memcpy(&x, p + 2 * k, 2); v->i[k] = x; break; }
        case TS_DT_I32: { int32_t x; memcpy(&x, p + 4 * k, 4); v->i[k] = x; break; }
        case TS_DT_I64: { int64_t x; memcpy(&x, p + 8 * k, 8); v->i[k] = x; break; }
        default: break;
        }
    }
}

/* Value of a graph tensor that carries data; -1 if it carries none or is too large. */
static int val_of(imp *im, int id, val *v)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(im->g, id);
    if (!t->data || t->rank < 0 || t->dtype == TS_DT_UNDEF)
        return -1;
    if (val_alloc(im, v, t->dtype, t->rank, t->dims))
        return -1;
    decode(v, t->data);
    return 0;
}

static double vget(const val *v, int64_t k)
{
    return v->i ? (double)v->i[k] : v->f[k];
}

/* A double as an int64, saturating; NaN is 0. */
static int64_t d2i(double x)
{
    return x != x ? 0 : x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (int64_t)x;
}

static int64_t vgeti(const val *v, int64_t k)
{
    return v->i ? v->i[k] : d2i(v->f[k]);
}

/* Encode v in its dtype and store it as a graph tensor's data. */
static ts_status store(imp *im, int id, const val *v)
{
    size_t es = ts_dtype_size(v->dt);
    uint8_t *p = ts_malloc((size_t)v->n * es + 1);
    if (!p)
        return ts_err_set(im->err, TS_ENOMEM, "out of memory");
    for (int64_t k = 0; k < v->n; k++) {
        switch (v->dt) {
        case TS_DT_F32: { float x = (float)v->f[k]; memcpy(p + 4 * k, &x, 4); break; }
        case TS_DT_F64: memcpy(p + 8 * k, &v->f[k], 8); break;
        case TS_DT_I8: case TS_DT_U8: case TS_DT_BOOL: p[k] = (uint8_t)v->i[k]; break;
        case TS_DT_I16: { int16_t x = (int16_t)v->i[k]; memcpy(p + 2 * k, &x, 2); break; }
        case TS_DT_I32: { int32_t x = (int32_t)v->i[k]; memcpy(p + 4 * k, &x, 4); break; }
        case TS_DT_I64: memcpy(p + 8 * k, &v->i[k], 8); break;
        default: memset(p + es * (size_t)k, 0, es); break;
        }
    }
    ts_status st = ts_graph_set_data(im->g, id, p, (size_t)v->n * es, im->err);
    ts_free(p);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Tensors from TensorProto. */

static ts_status tensor_from_proto(imp *im, const Onnx__TensorProto *tp, const char *name, ts_tensor_kind kind,
                                   bool keep, int *id)
{
    ts_dtype dt = onnx_dtype(tp->data_type);
    if (dt == TS_DT_UNDEF)
        return ts_err_set(im->err, TS_EINPUT, "tensor '%s' has unsupported data type %d", name, (int)tp->data_type);
    if (tp->n_dims > TS_GRAPH_MAX_RANK)
        return ts_err_set(im->err, TS_EINPUT, "tensor '%s' has rank %zu, more than %d", name, tp->n_dims,
                          TS_GRAPH_MAX_RANK);
    int64_t n = 1;
    for (size_t k = 0; k < tp->n_dims; k++) {
        if (tp->dims[k] < 0 || (tp->dims[k] && n > INT64_MAX / 4 / tp->dims[k]))
            return ts_err_set(im->err, TS_EINPUT, "tensor '%s' has a bad dimension %lld", name,
                              (long long)tp->dims[k]);
        n *= tp->dims[k];
    }
    if (kind == TS_TENSOR_WEIGHT && (!ts_dtype_is_float(dt) || n <= 1))
        kind = TS_TENSOR_CONST; /* an initializer that is a shape vector or a scalar */
    ts_status st = ts_graph_add_tensor(im->g, name, kind, dt, (int)tp->n_dims, tp->dims, id, im->err);
    if (st || !keep || n > TS_ONNX_KEEP_ELEMS)
        return st;
    size_t es = ts_dtype_size(dt), need = (size_t)n * es;
    if (tp->has_raw_data) {
        if (tp->raw_data.len != need)
            return ts_err_set(im->err, TS_EINPUT, "tensor '%s' has %zu bytes of raw data, its shape needs %zu",
                              name, tp->raw_data.len, need);
        return ts_graph_set_data(im->g, *id, tp->raw_data.data, need, im->err);
    }
    val v;
    if (val_alloc(im, &v, dt, (int)tp->n_dims, tp->dims))
        return ts_err_set(im->err, TS_ENOMEM, "out of memory");
    size_t have = 0;
    switch (dt) {
    case TS_DT_F32:
        have = tp->n_float_data;
        for (size_t k = 0; k < have && (int64_t)k < n; k++)
            v.f[k] = tp->float_data[k];
        break;
    case TS_DT_F64:
        have = tp->n_double_data;
        for (size_t k = 0; k < have && (int64_t)k < n; k++)
            v.f[k] = tp->double_data[k];
        break;
    case TS_DT_I64:
        have = tp->n_int64_data;
        for (size_t k = 0; k < have && (int64_t)k < n; k++)
            v.i[k] = tp->int64_data[k];
        break;
    case TS_DT_F16: case TS_DT_BF16: {
        /* half-precision values travel as the low 16 bits of int32_data: kept as they are */
        val_free(&v);
        if (tp->n_int32_data == 0)
            return TS_OK;
        if ((int64_t)tp->n_int32_data != n)
            return ts_err_set(im->err, TS_EINPUT, "tensor '%s' has %zu values, its shape needs %lld", name,
                              tp->n_int32_data, (long long)n);
        uint16_t *h = ts_malloc((size_t)n * 2 + 1);
        if (!h)
            return ts_err_set(im->err, TS_ENOMEM, "out of memory");
        for (int64_t k = 0; k < n; k++)
            h[k] = (uint16_t)tp->int32_data[k];
        st = ts_graph_set_data(im->g, *id, h, (size_t)n * 2, im->err);
        ts_free(h);
        return st;
    }
    default:
        have = tp->n_int32_data;
        for (size_t k = 0; k < have && (int64_t)k < n; k++)
            v.i[k] = tp->int32_data[k];
        break;
    }
    if (have == 0 && n > 0) { /* no values at all: a shape-only tensor */
        val_free(&v);
        return TS_OK;
    }
    if ((int64_t)have != n) {
        val_free(&v);
        return ts_err_set(im->err, TS_EINPUT, "tensor '%s' has %zu values, its shape needs %lld", name, have,
                          (long long)n);
    }
    st = store(im, *id, &v);
    val_free(&v);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Attributes. */

static const Onnx__AttributeProto *attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k]->name && !strcmp(n->attribute[k]->name, name))
            return n->attribute[k];
    return NULL;
}

static int64_t attr_i(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_i ? a->i : def;
}

static double attr_f(const Onnx__NodeProto *n, const char *name, double def)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_f ? a->f : def;
}

/* Copy an ints attribute (at most max); returns the count, or -1 if absent, -2 if too long. */
static int attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = attr(n, name);
    if (!a)
        return -1;
    if (a->n_ints > (size_t)max)
        return -2;
    for (size_t k = 0; k < a->n_ints; k++)
        out[k] = a->ints[k];
    return (int)a->n_ints;
}

static bool attr_s_is(const Onnx__NodeProto *n, const char *name, const char *want)
{
    const Onnx__AttributeProto *a = attr(n, name);
    return a && a->has_s && a->s.len == strlen(want) && !memcmp(a->s.data, want, a->s.len);
}

/* ---------------------------------------------------------------------------------------------
 * Operator tables. */

/* ONNX op types that map onto an IR op of the same name. */
static bool is_ir_op(const char *op, ts_graph_op *out)
{
    return !ts_graph_op_parse(op, out);
}

/* ONNX op types handled by folding, aliasing or rewriting into IR ops. */
static const char *const extra_ops[] = {
    "Constant", "Identity", "Dropout", "Shape", "Size", "Unsqueeze", "Squeeze", "Range",
    "ConstantOfShape", "Equal", "Where", "Neg", "Floor", "Ceil", "Min", "Max", NULL,
};

/* Ops that may be folded only (they have no IR op). */
static bool fold_only(const char *op)
{
    for (int k = 0; extra_ops[k]; k++)
        if (!strcmp(op, extra_ops[k]))
            return true;
    return false;
}

/* ONNX op types the importer writes as several IR ops (import_rewritten). */
static const char *const rewritten_ops[] = {"HardSigmoid", "Split", NULL};

static bool rewritten(const char *op)
{
    for (int k = 0; rewritten_ops[k]; k++)
        if (!strcmp(op, rewritten_ops[k]))
            return true;
    return false;
}

static ts_status check_supported(imp *im, const Onnx__GraphProto *gp)
{
    ts_buf b = TS_BUF_INIT;
    enum { MAX_LISTED = 32 };
    const Onnx__NodeProto *listed[MAX_LISTED]; /* first node of each op type listed */
    size_t bad = 0;
    bool more = false;
    for (size_t k = 0; k < gp->n_node; k++) {
        const Onnx__NodeProto *n = gp->node[k];
        const char *op = n->op_type ? n->op_type : "";
        ts_graph_op iop;
        bool std_domain = !n->domain || !*n->domain || !strcmp(n->domain, "ai.onnx");
        if (std_domain && (is_ir_op(op, &iop) || fold_only(op) || rewritten(op)))
            continue;
        bool seen = false;
        for (size_t j = 0; j < bad && !seen; j++) {
            const Onnx__NodeProto *m = listed[j];
            seen = !strcmp(m->op_type ? m->op_type : "", op) &&
                   !strcmp(m->domain ? m->domain : "", n->domain ? n->domain : "");
        }
        if (seen)
            continue;
        if (bad == MAX_LISTED) {
            more = true;
            continue;
        }
        ts_buf_printf(&b, "%s%s%s%s (first at node '%s')", bad ? ", " : "", std_domain ? "" : n->domain,
                      std_domain ? "" : ".", op, n->name && *n->name ? n->name : "?");
        listed[bad++] = n;
    }
    if (more)
        ts_buf_puts(&b, " and more");
    ts_status st = TS_OK;
    if (b.oom)
        st = ts_err_set(im->err, TS_ENOMEM, "out of memory");
    else if (bad)
        st = ts_err_set(im->err, TS_EINPUT, "unsupported operator%s: %s", bad > 1 ? "s" : "", ts_buf_str(&b));
    ts_buf_free(&b);
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Folding. */

/* Broadcast index: element k of the output maps to an element of v. */
static int64_t bidx(const val *v, int ro, const int64_t *od, int64_t k)
{
    int64_t idx = 0, stride = 1;
    for (int a = ro - 1; a >= 0; a--) {
        int64_t c = k % od[a];
        k /= od[a];
        int va = a - (ro - v->rank);
        if (va >= 0) {
            if (v->dims[va] != 1)
                idx += c * stride;
            stride *= v->dims[va];
        }
    }
    return idx;
}

static int64_t idiv_floor(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

/* Evaluate a node whose inputs all carry values. Returns 1 if folded into *out, 0 if this node
 * cannot be folded (the caller translates it), -1 on an error already set. */
static int fold(imp *im, const Onnx__NodeProto *n, const char *op, const int *ins, size_t nin, val *out)
{
    ts_graph *g = im->g;
    val v[16] = {0};
    int rc = 0;
    size_t nv = nin < 16 ? nin : 16;
    if (!strcmp(op, "Shape")) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, ins[0]);
        int64_t r = t->rank;
        if (val_alloc(im, out, TS_DT_I64, 1, &r))
            return 0;
        for (int k = 0; k < t->rank; k++)
            out->i[k] = t->dims[k];
        int64_t s = attr_i(n, "start", 0), e = attr_i(n, "end", r);
        s = s < 0 ? s + r : s;
        e = e < 0 ? e + r : e;
        s = s < 0 ? 0 : s > r ? r : s;
        e = e < 0 ? 0 : e > r ? r : e;
        int64_t m = e > s ? e - s : 0;
        memmove(out->i, out->i + s, (size_t)m * sizeof *out->i);
        out->dims[0] = out->n = m;
        return 1;
    }
    if (!strcmp(op, "Size")) {
        int64_t one = 1;
        if (val_alloc(im, out, TS_DT_I64, 0, &one))
            return 0;
        out->i[0] = ts_graph_tensor_elems(ts_graph_get_tensor(g, ins[0]));
        return 1;
    }
    for (size_t k = 0; k < nv; k++) {
        if (ins[k] < 0 && (strcmp(op, "Slice") || k < 3))
            goto done; /* only Slice folds with optional inputs left out */
        if (ins[k] >= 0 && val_of(im, ins[k], &v[k]))
            goto done;
    }
    /* the inputs each fold reads: fewer is a malformed node, left to the translation's errors */
    size_t want = !strcmp(op, "Where") || !strcmp(op, "Range") ? 3 : !strcmp(op, "Gather") || !strcmp(op, "Expand") ? 2 : 1;
    if (nv < want)
        goto done;
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout")) {
        *out = v[0];
        v[0].i = NULL;
        v[0].f = NULL;
        rc = 1;
    } else if (!strcmp(op, "Cast")) {
        ts_dtype to = onnx_dtype((int32_t)attr_i(n, "to", 0));
        if (to == TS_DT_UNDEF || to == TS_DT_F16 || to == TS_DT_BF16 ||
            val_alloc(im, out, to, v[0].rank, v[0].dims))
            goto done;
        for (int64_t k = 0; k < out->n; k++) {
            if (out->i)
                out->i[k] = to == TS_DT_BOOL ? vget(&v[0], k) != 0 : vgeti(&v[0], k);
            else
                out->f[k] = vget(&v[0], k);
        }
        rc = 1;
    } else if (!strcmp(op, "Unsqueeze") || !strcmp(op, "Squeeze") || !strcmp(op, "Reshape") ||
               !strcmp(op, "Flatten")) {
        goto done; /* handled as reshapes by translate(), which folds values through */
    } else if (!strcmp(op, "Gather")) {
        const val *d = &v[0], *ix = &v[1];
        int64_t ax = attr_i(n, "axis", 0);
        ax = ts_graph_norm_axis(ax, d->rank);
        if (ax < 0 || ax >= d->rank || d->rank - 1 + ix->rank > TS_GRAPH_MAX_RANK)
            goto done;
        int64_t od[TS_GRAPH_MAX_RANK];
        int r = 0;
        for (int k = 0; k < ax; k++)
            od[r++] = d->dims[k];
        for (int k = 0; k < ix->rank; k++)
            od[r++] = ix->dims[k];
        for (int k = (int)ax + 1; k < d->rank; k++)
            od[r++] = d->dims[k];
        if (val_alloc(im, out, d->dt, r, od))
            goto done;
        int64_t outer = 1, inner = 1, an = d->dims[ax];
        for (int k = 0; k < ax; k++)
            outer *= d->dims[k];
        for (int k = (int)ax + 1; k < d->rank; k++)
            inner *= d->dims[k];
        int64_t pos = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < ix->n; j++) {
                int64_t sel = vgeti(ix, j);
                sel = sel < 0 ? sel + an : sel;
                if (sel < 0 || sel >= an) {
                    node_err(im, n, "index %lld is out of range for a dimension of %lld", (long long)vgeti(ix, j),
                             (long long)an);
                    rc = -1;
                    goto done;
                }
                for (int64_t q = 0; q < inner; q++, pos++) {
                    int64_t src = (o * an + sel) * inner + q;
                    if (out->i)
                        out->i[pos] = vgeti(d, src);
                    else
                        out->f[pos] = vget(d, src);
                }
            }
        rc = 1;
    } else if (!strcmp(op, "Concat")) {
        int64_t ax = attr_i(n, "axis", 0);
        int r = v[0].rank;
        ax = ax < 0 ? ax + r : ax;
        if (r != 1 || ax != 0)
            goto done; /* constants concatenated are shape vectors */
        int64_t tot = 0;
        for (size_t k = 0; k < nv; k++) {
            if (v[k].rank != 1)
                goto done;
            tot += v[k].n;
        }
        if (val_alloc(im, out, v[0].dt, 1, &tot))
            goto done;
        int64_t pos = 0;
        for (size_t k = 0; k < nv; k++)
            for (int64_t j = 0; j < v[k].n; j++, pos++) {
                if (out->i)
                    out->i[pos] = vgeti(&v[k], j);
                else
                    out->f[pos] = vget(&v[k], j);
            }
        rc = 1;
    } else if (!strcmp(op, "Slice")) {
        if (v[0].rank != 1 || nin < 3)
            goto done;
        int64_t len = v[0].n, s = vgeti(&v[1], 0), e = vgeti(&v[2], 0), st = 1;
        if (nin > 3 && ins[3] >= 0 && vgeti(&v[3], 0) != 0 && vgeti(&v[3], 0) != -1)
            goto done;
        if (nin > 4 && ins[4] >= 0) {
            val sv;
            if (val_of(im, ins[4], &sv))
                goto done;
            st = vgeti(&sv, 0);
            val_free(&sv);
        }
        if (st != 1)
            goto done;
        s = s < 0 ? s + len : s;
        e = e < 0 ? e + len : e;
        s = s < 0 ? 0 : s > len ? len : s;
        e = e < 0 ? 0 : e > len ? len : e;
        int64_t m = e > s ? e - s : 0;
        if (val_alloc(im, out, v[0].dt, 1, &m))
            goto done;
        for (int64_t j = 0; j < m; j++) {
            if (out->i)
                out->i[j] = vgeti(&v[0], s + j);
            else
                out->f[j] = vget(&v[0], s + j);
        }
        rc = 1;
    } else if (!strcmp(op, "Range")) {
        if (v[0].i) {
            int64_t s = v[0].i[0], lim = vgeti(&v[1], 0), d = vgeti(&v[2], 0);
            if (d == 0)
                goto done;
            double mm = ceil(((double)lim - (double)s) / (double)d);
            if (mm > FOLD_MAX_ELEMS)
                goto done;
            int64_t m = mm > 0 ? (int64_t)mm : 0;
            if (val_alloc(im, out, v[0].dt, 1, &m))
                goto done;
            for (int64_t j = 0; j < m; j++)
                out->i[j] = s + j * d;
        } else {
            double s = vget(&v[0], 0), lim = vget(&v[1], 0), d = vget(&v[2], 0);
            if (d == 0)
                goto done;
            double mm = ceil((lim - s) / d);
            if (!(mm <= FOLD_MAX_ELEMS))
                goto done;
            int64_t m = mm > 0 ? (int64_t)mm : 0;
            if (val_alloc(im, out, v[0].dt, 1, &m))
                goto done;
            for (int64_t j = 0; j < m; j++)
                out->f[j] = s + (double)j * d;
        }
        rc = 1;
    } else if (!strcmp(op, "ConstantOfShape")) {
        int64_t dims[TS_GRAPH_MAX_RANK];
        if (v[0].n > TS_GRAPH_MAX_RANK)
            goto done;
        for (int64_t k = 0; k < v[0].n; k++)
            dims[k] = vgeti(&v[0], k);
        const Onnx__AttributeProto *va = attr(n, "value");
        ts_dtype dt = TS_DT_F32;
        double fill = 0;
        if (va && va->t) {
            dt = onnx_dtype(va->t->data_type);
            int id = -1;
            char nm[64];
            ts_graph_unique_name(g, "value", nm, sizeof nm);
            if (tensor_from_proto(im, va->t, nm, TS_TENSOR_CONST, true, &id)) {
                rc = -1;
                goto done;
            }
            val fv;
            if (val_of(im, id, &fv))
                goto done;
            fill = fv.n ? vget(&fv, 0) : 0;
            val_free(&fv);
        }
        if (val_alloc(im, out, dt, (int)v[0].n, dims))
            goto done;
        for (int64_t k = 0; k < out->n; k++) {
            if (out->i)
                out->i[k] = d2i(fill);
            else
                out->f[k] = fill;
        }
        rc = 1;
    } else if (!strcmp(op, "Expand")) {
        int64_t sh[TS_GRAPH_MAX_RANK], od[TS_GRAPH_MAX_RANK];
        int ro;
        if (v[1].n > TS_GRAPH_MAX_RANK)
            goto done;
        for (int64_t k = 0; k < v[1].n; k++)
            sh[k] = vgeti(&v[1], k);
        if (ts_graph_broadcast(v[0].rank, v[0].dims, (int)v[1].n, sh, &ro, od) ||
            val_alloc(im, out, v[0].dt, ro, od))
            goto done;
        for (int64_t k = 0; k < out->n; k++) {
            int64_t s = bidx(&v[0], ro, od, k);
            if (out->i)
                out->i[k] = vgeti(&v[0], s);
            else
                out->f[k] = vget(&v[0], s);
        }
        rc = 1;
    } else if (!strcmp(op, "Where")) {
        int64_t od[TS_GRAPH_MAX_RANK], t[TS_GRAPH_MAX_RANK];
        int ro, rt;
        if (ts_graph_broadcast(v[0].rank, v[0].dims, v[1].rank, v[1].dims, &rt, t) ||
            ts_graph_broadcast(rt, t, v[2].rank, v[2].dims, &ro, od) || val_alloc(im, out, v[1].dt, ro, od))
            goto done;
        for (int64_t k = 0; k < out->n; k++) {
            bool c = vget(&v[0], bidx(&v[0], ro, od, k)) != 0;
            const val *src = c ? &v[1] : &v[2];
            int64_t s = bidx(src, ro, od, k);
            if (out->i)
                out->i[k] = vgeti(src, s);
            else
                out->f[k] = vget(src, s);
        }
        rc = 1;
    } else if (!strcmp(op, "Sqrt") || !strcmp(op, "Neg") || !strcmp(op, "Floor") || !strcmp(op, "Ceil") ||
               !strcmp(op, "Relu")) {
        if (val_alloc(im, out, v[0].dt, v[0].rank, v[0].dims))
            goto done;
        for (int64_t k = 0; k < out->n; k++) {
            double x = vget(&v[0], k);
            double y = op[0] == 'S' ? sqrt(x) : op[0] == 'N' ? -x : op[0] == 'F' ? floor(x) : op[0] == 'C' ? ceil(x)
                                                                                            : (x > 0 ? x : 0);
            if (out->i)
                out->i[k] = op[0] == 'N'   ? (int64_t)(0 - (uint64_t)v[0].i[k])
                            : op[0] == 'R' ? (v[0].i[k] > 0 ? v[0].i[k] : 0)
                            : op[0] == 'S' ? d2i(y)
                                           : v[0].i[k];
            else
                out->f[k] = y;
        }
        rc = 1;
    } else if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
               !strcmp(op, "Pow") || !strcmp(op, "Equal") || !strcmp(op, "Min") || !strcmp(op, "Max")) {
        if (nv != 2)
            goto done;
        int64_t od[TS_GRAPH_MAX_RANK];
        int ro;
        bool eq = !strcmp(op, "Equal");
        if (ts_graph_broadcast(v[0].rank, v[0].dims, v[1].rank, v[1].dims, &ro, od) ||
            val_alloc(im, out, eq ? TS_DT_BOOL : v[0].dt, ro, od))
            goto done;
        bool ints = v[0].i && v[1].i;
        for (int64_t k = 0; k < out->n; k++) {
            int64_t ia = bidx(&v[0], ro, od, k), ib = bidx(&v[1], ro, od, k);
            if (ints) {
                int64_t a = v[0].i[ia], b = v[1].i[ib], y;
                switch (op[0] == 'M' ? op[1] : op[0]) {
                case 'A': y = (int64_t)((uint64_t)a + (uint64_t)b); break;
                case 'S': y = (int64_t)((uint64_t)a - (uint64_t)b); break;
                case 'u': y = (int64_t)((uint64_t)a * (uint64_t)b); break;
                case 'D':
                    if (b == 0 || (a == INT64_MIN && b == -1))
                        goto done;
                    y = idiv_floor(a, b);
                    break;
                case 'E': y = a == b; break;
                case 'i': y = a < b ? a : b; break;
                case 'a': y = a > b ? a : b; break;
                default: y = d2i(pow((double)a, (double)b)); break;
                }
                out->i[k] = y;
            } else {
                double a = vget(&v[0], ia), b = vget(&v[1], ib), y;
                switch (op[0] == 'M' ? op[1] : op[0]) {
                case 'A': y = a + b; break;
                case 'S': y = a - b; break;
                case 'u': y = a * b; break;
                case 'D': y = a / b; break;
                case 'E': y = a == b; break;
                case 'i': y = a < b ? a : b; break;
                case 'a': y = a > b ? a : b; break;
                default: y = pow(a, b); break;
                }
                if (out->i)
                    out->i[k] = d2i(y);
                else
                    out->f[k] = y;
            }
        }
        rc = 1;
    }
done:
    for (size_t k = 0; k < nv; k++)
        val_free(&v[k]);
    if (rc == 1 && (out->dt == TS_DT_F16 || out->dt == TS_DT_BF16))
        rc = 0; /* store() writes no half-precision values: leave the node to the IR */
    if (rc != 1)
        val_free(out);
    return rc;
}

/* ---------------------------------------------------------------------------------------------
 * Translation of one node. */

/* Integer values of input k (which must carry data); -1 if it does not. */
static int input_ints(imp *im, const int *ins, size_t nin, size_t k, int64_t *out, int max, int *count)
{
    if (k >= nin || ins[k] < 0)
        return -1;
    val v;
    if (val_of(im, ins[k], &v))
        return -1;
    if (v.n > max) {
        val_free(&v);
        return -1;
    }
    for (int64_t j = 0; j < v.n; j++)
        out[j] = vgeti(&v, j);
    *count = (int)v.n;
    val_free(&v);
    return 0;
}

/* Resolve auto_pad into explicit pads for a window op over input x. */
static void auto_pad(const Onnx__NodeProto *n, const ts_graph_tensor *x, ts_graph_attrs *a, const int64_t *k)
{
    bool upper = attr_s_is(n, "auto_pad", "SAME_UPPER"), lower = attr_s_is(n, "auto_pad", "SAME_LOWER");
    if (attr_s_is(n, "auto_pad", "VALID")) {
        memset(a->pads, 0, sizeof a->pads);
        return;
    }
    if (!upper && !lower)
        return;
    for (int i = 0; i < 2; i++) {
        int64_t in = x->dims[2 + i], s = a->strides[i], out = (in + s - 1) / s;
        int64_t tot = (out - 1) * s + (k[i] - 1) * a->dilations[i] + 1 - in;
        tot = tot < 0 ? 0 : tot;
        a->pads[i] = upper ? tot / 2 : tot - tot / 2;
        a->pads[2 + i] = tot - a->pads[i];
    }
}

/* Window attributes shared by Conv and the pools. */
static ts_status window_attrs(imp *im, const Onnx__NodeProto *n, ts_graph_attrs *a)
{
    int64_t tmp[4];
    int c;
    if ((c = attr_ints(n, "kernel_shape", tmp, 2)) == 2) {
        /* 0 stands for "not given" in the IR (a Conv takes its weight's): a written 0 is wrong */
        if (tmp[0] < 1 || tmp[1] < 1)
            return node_err(im, n, "kernel_shape %lldx%lld: a kernel is at least 1x1", (long long)tmp[0],
                            (long long)tmp[1]);
        a->kernel[0] = tmp[0];
        a->kernel[1] = tmp[1];
    } else if (c != -1)
        return node_err(im, n, "only 2-d windows are supported, kernel_shape has %d entries", c);
    if ((c = attr_ints(n, "strides", tmp, 2)) == 2) {
        a->strides[0] = tmp[0];
        a->strides[1] = tmp[1];
    } else if (c != -1)
        return node_err(im, n, "strides must have 2 entries");
    if ((c = attr_ints(n, "dilations", tmp, 2)) == 2) {
        a->dilations[0] = tmp[0];
        a->dilations[1] = tmp[1];
    } else if (c != -1)
        return node_err(im, n, "dilations must have 2 entries");
    if ((c = attr_ints(n, "pads", tmp, 4)) == 4)
        memcpy(a->pads, tmp, sizeof a->pads);
    else if (c != -1)
        return node_err(im, n, "pads must have 4 entries");
    const int64_t lim = INT64_C(1) << 31;
    for (int i = 0; i < 2; i++)
        if (a->strides[i] < 1 || a->dilations[i] < 1 || a->strides[i] > lim || a->dilations[i] > lim ||
            a->kernel[i] < 0 || a->kernel[i] > lim)
            return node_err(im, n, "strides and dilations must be from 1 to 2^31, kernels at most 2^31");
    for (int i = 0; i < 4; i++)
        if (a->pads[i] < 0 || a->pads[i] > lim)
            return node_err(im, n, "pads must be from 0 to 2^31");
    a->group = attr_i(n, "group", 1);
    a->ceil_mode = attr_i(n, "ceil_mode", 0) != 0;
    a->count_include_pad = attr_i(n, "count_include_pad", 0) != 0;
    return TS_OK;
}

/* Create the output tensors of n (activations, shape to be inferred). */
static ts_status make_outputs(imp *im, const Onnx__NodeProto *n, int *outs, size_t *nout, size_t max)
{
    *nout = 0;
    for (size_t k = 0; k < n->n_output && k < max; k++) {
        if (!n->output[k] || !*n->output[k])
            continue;
        if (lookup(im, n->output[k]) >= 0)
            return node_err(im, n, "output '%s' is defined twice", n->output[k]);
        ts_status st = ts_graph_add_tensor(im->g, n->output[k], TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL,
                                           &outs[(*nout)++], im->err);
        if (st)
            return st;
    }
    if (*nout == 0)
        return node_err(im, n, "has no output");
    return TS_OK;
}

/* Shape of a reshape-like op on input x: Reshape (shape input), Flatten, Squeeze, Unsqueeze. */
static ts_status reshape_target(imp *im, const Onnx__NodeProto *n, const char *op, const int *ins, size_t nin,
                                int64_t *shape, int *rank)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(im->g, ins[0]);
    int64_t tmp[TS_GRAPH_MAX_RANK];
    int c = 0;
    if (!strcmp(op, "Flatten")) {
        int64_t ax = attr_i(n, "axis", 1);
        ax = ts_graph_norm_axis(ax, x->rank);
        if (ax < 0 || ax > x->rank)
            return node_err(im, n, "axis %lld is out of range for rank %d", (long long)attr_i(n, "axis", 1),
                            x->rank);
        shape[0] = shape[1] = 1;
        for (int k = 0; k < x->rank; k++)
            shape[k < ax ? 0 : 1] *= x->dims[k];
        *rank = 2;
        return TS_OK;
    }
    if (!strcmp(op, "Reshape")) {
        if (input_ints(im, ins, nin, 1, tmp, TS_GRAPH_MAX_RANK, &c))
            return node_err(im, n, "the target shape is not known at import (it must be a constant)");
        bool allowzero = attr_i(n, "allowzero", 0) != 0;
        int64_t known = 1;
        int neg = -1;
        for (int k = 0; k < c; k++) {
            if (tmp[k] == 0 && !allowzero) {
                if (k >= x->rank)
                    return node_err(im, n, "shape entry 0 at %d copies a dimension the input lacks", k);
                tmp[k] = x->dims[k];
            }
            if (tmp[k] == -1) {
                if (neg >= 0)
                    return node_err(im, n, "more than one -1 in the target shape");
                neg = k;
            } else if (tmp[k] < 0) {
                return node_err(im, n, "negative dimension %lld in the target shape", (long long)tmp[k]);
            } else if (__builtin_mul_overflow(known, tmp[k], &known)) {
                return node_err(im, n, "the target shape is too large");
            }
        }
        if (neg >= 0) {
            int64_t tot = ts_graph_tensor_elems(x);
            if (known == 0 || tot % known)
                return node_err(im, n, "cannot infer -1: %lld elements do not divide by %lld", (long long)tot,
                                (long long)known);
            tmp[neg] = tot / known;
        }
        memcpy(shape, tmp, (size_t)c * sizeof *shape);
        *rank = c;
        return TS_OK;
    }
    /* Squeeze / Unsqueeze: axes as an attribute (opset < 13) or a second input */
    int na = attr_ints(n, "axes", tmp, TS_GRAPH_MAX_RANK);
    if (na == -1 && input_ints(im, ins, nin, 1, tmp, TS_GRAPH_MAX_RANK, &na))
        na = -1;
    if (!strcmp(op, "Squeeze")) {
        bool drop[TS_GRAPH_MAX_RANK] = {0};
        if (na < 0) {
            for (int k = 0; k < x->rank; k++)
                drop[k] = x->dims[k] == 1;
        } else {
            for (int k = 0; k < na; k++) {
                int64_t a = ts_graph_norm_axis(tmp[k], x->rank);
                if (a < 0 || a >= x->rank || x->dims[a] != 1)
                    return node_err(im, n, "cannot squeeze axis %lld", (long long)tmp[k]);
                drop[a] = true;
            }
        }
        *rank = 0;
        for (int k = 0; k < x->rank; k++)
            if (!drop[k])
                shape[(*rank)++] = x->dims[k];
        return TS_OK;
    }
    if (na < 0)
        return node_err(im, n, "axes are not known at import");
    int r = x->rank + na;
    if (r > TS_GRAPH_MAX_RANK)
        return node_err(im, n, "rank %d exceeds %d", r, TS_GRAPH_MAX_RANK);
    bool ins1[TS_GRAPH_MAX_RANK] = {0};
    for (int k = 0; k < na; k++) {
        int64_t a = tmp[k] < 0 ? tmp[k] + r : tmp[k];
        if (a < 0 || a >= r || ins1[a])
            return node_err(im, n, "bad unsqueeze axis %lld", (long long)tmp[k]);
        ins1[a] = true;
    }
    for (int k = 0, j = 0; k < r; k++)
        shape[k] = ins1[k] ? 1 : x->dims[j++];
    *rank = r;
    return TS_OK;
}

/* A scalar f32 constant named after base; *id receives it. */
static ts_status add_scalar(imp *im, const char *base, double v, int *id)
{
    char nm[512];
    float f = (float)v;
    ts_graph_unique_name(im->g, base, nm, sizeof nm);
    ts_status st = ts_graph_add_tensor(im->g, nm, TS_TENSOR_CONST, TS_DT_F32, 0, NULL, id, im->err);
    return st ? st : ts_graph_set_data(im->g, *id, &f, sizeof f, im->err);
}

/* Add one IR node of a rewritten ONNX node: output out (-1: a new activation named after the
 * ONNX node's first output, returned in *out), node named "<node>.<part>", shape inferred. */
static ts_status add_part(imp *im, const Onnx__NodeProto *n, const char *part, ts_graph_op op, const int *ins,
                          size_t nin, const ts_graph_attrs *a, int *out)
{
    char nm[512], base[480];
    const char *o0 = n->n_output && n->output[0] ? n->output[0] : "";
    ts_status st;
    if (*out < 0) {
        snprintf(base, sizeof base, "%s.%s", o0, part);
        ts_graph_unique_name(im->g, base, nm, sizeof nm);
        if ((st = ts_graph_add_tensor(im->g, nm, TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, out, im->err)))
            return st;
    }
    snprintf(nm, sizeof nm, "%s.%s", n->name && *n->name ? n->name : o0, part);
    int nid;
    if ((st = ts_graph_add_node(im->g, op, nm, ins, nin, out, 1, a, &nid, im->err)))
        return st;
    return ts_graph_infer_node(im->g, nid, im->err);
}

/* HardSigmoid: max(0, min(1, alpha * x + beta)) as Mul, Add and Clip 0..1 (finalize recognises
 * x * HardSigmoid(x) with alpha 1/6 and beta 0.5 as HardSwish). */
static ts_status import_hardsigmoid(imp *im, const Onnx__NodeProto *n, int x)
{
    int alpha, beta, t1 = -1, t2 = -1, y;
    ts_status st;
    size_t nout;
    if ((st = add_scalar(im, "hardsigmoid.alpha", attr_f(n, "alpha", 0.2), &alpha)) ||
        (st = add_scalar(im, "hardsigmoid.beta", attr_f(n, "beta", 0.5), &beta)))
        return st;
    int mi[2] = {x, alpha};
    if ((st = add_part(im, n, "mul", TS_OP_MUL, mi, 2, NULL, &t1)))
        return st;
    int ai[2] = {t1, beta};
    if ((st = add_part(im, n, "add", TS_OP_ADD, ai, 2, NULL, &t2)))
        return st;
    if ((st = make_outputs(im, n, &y, &nout, 1)))
        return st;
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.min = 0;
    a.max = 1;
    return add_part(im, n, "clip", TS_OP_CLIP, &t2, 1, &a, &y);
}

/* The sizes a Split cuts axis dimension dim into, one per output: the split input (opset 13 and
 * later) or attribute (earlier), else equal parts (opset 18: num_outputs, the last part
 * smaller when they do not divide). */
static ts_status split_sizes(imp *im, const Onnx__NodeProto *n, const int *ins, size_t nin, int64_t dim,
                             int64_t *sz, size_t cnt)
{
    int c = -1;
    enum { MAX_SPLIT = 64 };
    int64_t tmp[MAX_SPLIT];
    if (im->opset >= 13 && nin > 1 && ins[1] >= 0) {
        if (input_ints(im, ins, nin, 1, tmp, MAX_SPLIT, &c))
            return node_err(im, n, "the split sizes are not known at import (they must be a constant)");
    } else if (im->opset < 13) {
        c = attr_ints(n, "split", tmp, MAX_SPLIT);
    }
    if (c >= 0) {
        if ((size_t)c != cnt)
            return node_err(im, n, "%d split sizes for %zu outputs", c, cnt);
        int64_t tot = 0;
        for (size_t k = 0; k < cnt; k++) {
            if (tmp[k] < 0 || __builtin_add_overflow(tot, tmp[k], &tot))
                return node_err(im, n, "split size %lld is out of range", (long long)tmp[k]);
            sz[k] = tmp[k];
        }
        if (tot != dim)
            return node_err(im, n, "split sizes add up to %lld, the axis has %lld", (long long)tot, (long long)dim);
        return TS_OK;
    }
    int64_t num = attr_i(n, "num_outputs", (int64_t)cnt);
    if (num != (int64_t)cnt)
        return node_err(im, n, "num_outputs is %lld, the node has %zu outputs", (long long)num, cnt);
    int64_t part = (dim + num - 1) / num;
    if (im->opset < 18 && dim % num)
        return node_err(im, n, "an axis of %lld does not split into %lld equal parts", (long long)dim, (long long)num);
    for (size_t k = 0; k < cnt; k++) {
        int64_t left = dim - part * (int64_t)k;
        sz[k] = left < part ? (left > 0 ? left : 0) : part;
    }
    return TS_OK;
}

/* Split: one Slice per output along the axis. */
static ts_status import_split(imp *im, const Onnx__NodeProto *n, const int *ins, size_t nin)
{
    const ts_graph_tensor *x = ts_graph_get_tensor(im->g, ins[0]);
    int64_t ax = attr_i(n, "axis", 0), sz[64];
    int64_t axis = ts_graph_norm_axis(ax, x->rank);
    size_t cnt = n->n_output;
    if (axis < 0 || axis >= x->rank)
        return node_err(im, n, "axis %lld is out of range for rank %d", (long long)ax, x->rank);
    if (cnt < 1 || cnt > 64)
        return node_err(im, n, "has %zu outputs, tessera splits into 1 to 64", cnt);
    ts_status st = split_sizes(im, n, ins, nin, x->dims[axis], sz, cnt);
    if (st)
        return st;
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    a.nslice = x->rank;
    for (int k = 0; k < x->rank; k++) {
        a.ends[k] = x->dims[k];
        a.steps[k] = 1;
    }
    int64_t off = 0;
    for (size_t k = 0; k < cnt; k++) {
        const char *o = n->output[k];
        int64_t start = off;
        off += sz[k];
        if (!o || !*o)
            continue;
        if (lookup(im, o) >= 0)
            return node_err(im, n, "output '%s' is defined twice", o);
        int y;
        if ((st = ts_graph_add_tensor(im->g, o, TS_TENSOR_ACTIVATION, TS_DT_F32, -1, NULL, &y, im->err)))
            return st;
        a.starts[axis] = start;
        a.ends[axis] = off;
        char part[32];
        snprintf(part, sizeof part, "slice%zu", k);
        if ((st = add_part(im, n, part, TS_OP_SLICE, ins, 1, &a, &y)))
            return st;
    }
    return TS_OK;
}

static ts_status import_node(imp *im, const Onnx__NodeProto *n)
{
    ts_graph *g = im->g;
    const char *op = n->op_type ? n->op_type : "";
    int ins[16];
    size_t nin = 0;
    bool all_data = true;
    if (n->n_input > 16)
        return node_err(im, n, "has %zu inputs, more than 16", n->n_input);
    for (size_t k = 0; k < n->n_input; k++) {
        if (!n->input[k] || !*n->input[k]) {
            ins[nin++] = -1;
            continue;
        }
        int id = lookup(im, n->input[k]);
        if (id < 0)
            return node_err(im, n, "input '%s' is not defined before it (nodes must be in topological order)",
                            n->input[k]);
        ins[nin++] = id;
        if (!ts_graph_get_tensor(g, id)->data)
            all_data = false;
    }
    while (nin && ins[nin - 1] < 0)
        nin--;
    for (size_t k = 0; k < nin; k++) {
        if (ins[k] >= 0 && ts_graph_get_tensor(g, ins[k])->rank < 0)
            return node_err(im, n, "input '%s' has no known shape", ts_graph_get_tensor(g, ins[k])->name);
    }
    const char *out0 = n->n_output ? n->output[0] : NULL;
    if (!strcmp(op, "Constant")) {
        if (!out0)
            return node_err(im, n, "has no output");
        const Onnx__AttributeProto *a = n->n_attribute ? n->attribute[0] : NULL;
        int id;
        if (a && a->t)
            return tensor_from_proto(im, a->t, out0, TS_TENSOR_CONST, true, &id);
        val v;
        int64_t cnt = 0;
        if (a && (a->has_f || a->has_i)) {
            if (val_alloc(im, &v, a->has_f ? TS_DT_F32 : TS_DT_I64, 0, &cnt))
                return ts_err_set(im->err, TS_ENOMEM, "out of memory");
            if (a->has_f)
                v.f[0] = a->f;
            else
                v.i[0] = a->i;
        } else if (a && (a->n_floats || a->n_ints)) {
            cnt = a->n_floats ? (int64_t)a->n_floats : (int64_t)a->n_ints;
            if (val_alloc(im, &v, a->n_floats ? TS_DT_F32 : TS_DT_I64, 1, &cnt))
                return node_err(im, n, "constant too large");
            for (int64_t k = 0; k < cnt; k++) {
                if (a->n_floats)
                    v.f[k] = a->floats[k];
                else
                    v.i[k] = a->ints[k];
            }
        } else {
            return node_err(im, n, "has no value attribute tessera reads");
        }
        ts_status st = ts_graph_add_tensor(g, out0, TS_TENSOR_CONST, v.dt, v.rank, v.dims, &id, im->err);
        if (!st)
            st = store(im, id, &v);
        val_free(&v);
        return st;
    }
    if (!strcmp(op, "Identity") || !strcmp(op, "Dropout")) {
        if (nin < 1 || ins[0] < 0 || !out0)
            return node_err(im, n, "needs one input and one output");
        return add_alias(im, out0, ins[0]);
    }
    bool shape_only = !strcmp(op, "Shape") || !strcmp(op, "Size");
    if ((all_data || shape_only) && nin > 0 && ins[0] >= 0) {
        val v = {0};
        int rc = fold(im, n, op, ins, nin, &v);
        if (rc < 0)
            return im->err->status;
        if (rc > 0) {
            if (!out0) {
                val_free(&v);
                return node_err(im, n, "has no output");
            }
            /* A folded weight stays a weight: it is part of the model's parameters. */
            ts_tensor_kind kind = TS_TENSOR_CONST;
            for (size_t k = 0; k < nin && !shape_only; k++)
                if (ins[k] >= 0 && ts_graph_get_tensor(g, ins[k])->kind == TS_TENSOR_WEIGHT)
                    kind = TS_TENSOR_WEIGHT;
            int id;
            ts_status st = ts_graph_add_tensor(g, out0, kind, v.dt, v.rank, v.dims, &id, im->err);
            if (!st)
                st = store(im, id, &v);
            val_free(&v);
            return st;
        }
    }
    ts_graph_attrs a;
    ts_graph_attrs_init(&a);
    ts_graph_op iop;
    size_t keep = nin; /* IR inputs: the first `keep` of ins */
    const ts_graph_tensor *x = nin && ins[0] >= 0 ? ts_graph_get_tensor(g, ins[0]) : NULL;
    if (!x)
        return node_err(im, n, "has no data input");
    if (!strcmp(op, "HardSigmoid"))
        return n->n_output && n->output[0] && *n->output[0] ? import_hardsigmoid(im, n, ins[0]) : node_err(im, n, "has no output");
    if (!strcmp(op, "Split"))
        return import_split(im, n, ins, nin);
    if (!strcmp(op, "Reshape") || !strcmp(op, "Flatten") || !strcmp(op, "Squeeze") || !strcmp(op, "Unsqueeze")) {
        ts_status st = reshape_target(im, n, op, ins, nin, a.shape, &a.nshape);
        if (st)
            return st;
        if (x->data) { /* values pass through unchanged: a constant of the new shape */
            if (!out0)
                return node_err(im, n, "has no output");
            int id;
            st = ts_graph_add_tensor(g, out0, x->kind, x->dtype, a.nshape, a.shape, &id, im->err);
            x = ts_graph_get_tensor(g, ins[0]);
            if (!st)
                st = ts_graph_set_data(g, id, x->data, (size_t)ts_graph_tensor_elems(x) * ts_dtype_size(x->dtype),
                                       im->err);
            return st;
        }
        iop = TS_OP_RESHAPE;
        keep = 1;
    } else if (fold_only(op)) {
        return all_data ? node_err(im, n, "its constant inputs do not fold (an input missing, or a shape or type "
                                          "tessera does not fold)")
                        : node_err(im, n, "inputs are not constants, and tessera folds %s only on constants", op);
    } else if (!is_ir_op(op, &iop)) {
        return node_err(im, n, "unsupported operator");
    }
    ts_status st = TS_OK;
    switch (iop) {
    case TS_OP_CONV:
        if (nin < 2 || ins[1] < 0)
            return node_err(im, n, "needs a weight input");
        if ((st = window_attrs(im, n, &a)))
            return st;
        if (ts_graph_get_tensor(g, ins[1])->rank == 4 && x->rank == 4) {
            const int64_t *wd = ts_graph_get_tensor(g, ins[1])->dims;
            int64_t k[2] = {wd[2], wd[3]};
            auto_pad(n, x, &a, k);
        }
        if (nin > 2 && ins[2] < 0)
            keep = 2;
        break;
    case TS_OP_MAXPOOL:
    case TS_OP_AVGPOOL:
        if ((st = window_attrs(im, n, &a)))
            return st;
        if (x->rank == 4)
            auto_pad(n, x, &a, a.kernel);
        if (n->n_output > 1 && n->output[1] && *n->output[1])
            return node_err(im, n, "the Indices output is not supported");
        break;
    case TS_OP_GEMM:
        a.alpha = attr_f(n, "alpha", 1.0);
        a.beta = attr_f(n, "beta", 1.0);
        a.trans_a = attr_i(n, "transA", 0) != 0;
        a.trans_b = attr_i(n, "transB", 0) != 0;
        break;
    case TS_OP_CLIP: {
        a.min = attr_f(n, "min", -INFINITY);
        a.max = attr_f(n, "max", INFINITY);
        for (size_t k = 1; k < nin && k < 3; k++) {
            if (ins[k] < 0)
                continue;
            val v;
            if (val_of(im, ins[k], &v))
                return node_err(im, n, "the %s bound is not a constant", k == 1 ? "min" : "max");
            if (k == 1)
                a.min = vget(&v, 0);
            else
                a.max = vget(&v, 0);
            val_free(&v);
        }
        keep = 1;
        break;
    }
    case TS_OP_GELU:
        a.approximate_tanh = attr_s_is(n, "approximate", "tanh");
        break;
    case TS_OP_SOFTMAX:
        a.axis = attr_i(n, "axis", im->opset >= 13 ? -1 : 1);
        if (im->opset < 13) {
            /* Before opset 13 Softmax flattens to 2-d at axis; same as last-axis for axis = rank-1. */
            int64_t ax = ts_graph_norm_axis(a.axis, x->rank);
            if (ax != x->rank - 1)
                return node_err(im, n, "softmax of opset %lld over axis %lld of a rank %d input is not supported",
                                (long long)im->opset, (long long)a.axis, x->rank);
        }
        break;
    case TS_OP_REDUCEMEAN: {
        int c = attr_ints(n, "axes", a.axes, TS_GRAPH_MAX_RANK);
        if (c == -2)
            return node_err(im, n, "too many axes");
        if (c < 0 && nin > 1 && ins[1] >= 0 && input_ints(im, ins, nin, 1, a.axes, TS_GRAPH_MAX_RANK, &c))
            return node_err(im, n, "the axes are not constants");
        a.naxes = c < 0 ? 0 : c;
        a.keepdims = attr_i(n, "keepdims", 1) != 0;
        keep = 1;
        break;
    }
    case TS_OP_TRANSPOSE: {
        int c = attr_ints(n, "perm", a.perm, TS_GRAPH_MAX_RANK);
        if (c == -2)
            return node_err(im, n, "perm is too long");
        a.nperm = c < 0 ? 0 : c;
        break;
    }
    case TS_OP_CONCAT:
        a.axis = attr_i(n, "axis", 0);
        break;
    case TS_OP_GATHER:
        a.axis = attr_i(n, "axis", 0);
        break;
    case TS_OP_EXPAND: {
        int c;
        if (input_ints(im, ins, nin, 1, a.shape, TS_GRAPH_MAX_RANK, &c))
            return node_err(im, n, "the target shape is not known at import (it must be a constant)");
        a.nshape = c;
        keep = 1;
        break;
    }
    case TS_OP_CAST:
        a.to = onnx_dtype((int32_t)attr_i(n, "to", 0));
        if (a.to == TS_DT_UNDEF)
            return node_err(im, n, "unsupported target type %lld", (long long)attr_i(n, "to", 0));
        break;
    case TS_OP_SLICE: {
        int64_t st_[TS_GRAPH_MAX_RANK], en[TS_GRAPH_MAX_RANK], ax[TS_GRAPH_MAX_RANK], sp[TS_GRAPH_MAX_RANK];
        int ns = -1, ne = -1, nax = -1, nsp = -1;
        if (im->opset < 10) {
            ns = attr_ints(n, "starts", st_, TS_GRAPH_MAX_RANK);
            ne = attr_ints(n, "ends", en, TS_GRAPH_MAX_RANK);
            nax = attr_ints(n, "axes", ax, TS_GRAPH_MAX_RANK);
        } else {
            if (input_ints(im, ins, nin, 1, st_, TS_GRAPH_MAX_RANK, &ns) ||
                input_ints(im, ins, nin, 2, en, TS_GRAPH_MAX_RANK, &ne))
                return node_err(im, n, "starts and ends are not known at import (they must be constants)");
            if (nin > 3 && ins[3] >= 0 && input_ints(im, ins, nin, 3, ax, TS_GRAPH_MAX_RANK, &nax))
                return node_err(im, n, "the axes are not constants");
            if (nin > 4 && ins[4] >= 0 && input_ints(im, ins, nin, 4, sp, TS_GRAPH_MAX_RANK, &nsp))
                return node_err(im, n, "the steps are not constants");
        }
        if (ns < 0 || ns != ne || (nax >= 0 && nax != ns) || (nsp >= 0 && nsp != ns))
            return node_err(im, n, "starts, ends, axes and steps differ in length");
        a.nslice = x->rank;
        for (int k = 0; k < x->rank; k++) {
            a.starts[k] = 0;
            a.ends[k] = x->dims[k];
            a.steps[k] = 1;
        }
        for (int k = 0; k < ns; k++) {
            int64_t axis = nax >= 0 ? ax[k] : k;
            axis = ts_graph_norm_axis(axis, x->rank);
            if (axis < 0 || axis >= x->rank)
                return node_err(im, n, "axis %lld is out of range for rank %d", (long long)(nax >= 0 ? ax[k] : k),
                                x->rank);
            int64_t dim = x->dims[axis], step = nsp >= 0 ? sp[k] : 1, s = st_[k], e = en[k];
            if (step == 0)
                return node_err(im, n, "step 0 on axis %lld", (long long)axis);
            s = s < 0 ? (s < -dim ? 0 : s + dim) : s;
            e = e < 0 ? (e < -dim ? -1 : e + dim) : e;
            if (step > 0) {
                s = s > dim ? dim : s;
                e = e > dim ? dim : e < 0 ? 0 : e;
            } else {
                s = s > dim - 1 ? dim - 1 : s;
                e = e > dim - 1 ? dim - 1 : e;
            }
            a.starts[axis] = s;
            a.ends[axis] = e;
            a.steps[axis] = step;
        }
        keep = 1;
        break;
    }
    case TS_OP_BATCHNORM:
        a.epsilon = attr_f(n, "epsilon", 1e-5);
        break;
    case TS_OP_LAYERNORM:
    case TS_OP_RMSNORM:
        a.axis = attr_i(n, "axis", -1);
        a.epsilon = attr_f(n, "epsilon", 1e-5);
        break;
    default:
        break;
    }
    for (size_t k = 0; k < keep; k++)
        if (ins[k] < 0)
            return node_err(im, n, "optional input %zu left out before a later one", k);
    int outs[4];
    size_t nout;
    size_t maxout = iop == TS_OP_LAYERNORM ? 3 : 1;
    if ((st = make_outputs(im, n, outs, &nout, maxout)))
        return st;
    int nid;
    if ((st = ts_graph_add_node(g, iop, n->name && *n->name ? n->name : NULL, ins, keep, outs, nout, &a, &nid,
                                im->err)))
        return st;
    return ts_graph_infer_node(g, nid, im->err);
}

/* ---------------------------------------------------------------------------------------------
 * Graph inputs and the whole model. */

static bool is_initializer(const Onnx__GraphProto *gp, const char *name)
{
    for (size_t k = 0; k < gp->n_initializer; k++)
        if (gp->initializer[k]->name && !strcmp(gp->initializer[k]->name, name))
            return true;
    return false;
}

/* The value given for symbolic dimension sym in "a=1,b=2"; -1 if none, -2 if malformed. */
static int64_t sym_value(const char *dims, const char *sym)
{
    size_t n = strlen(sym);
    for (const char *p = dims; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (eq && (size_t)(eq - p) == n && !memcmp(p, sym, n)) {
            char num[32];
            size_t nl = len - n - 1;
            if (nl == 0 || nl >= sizeof num)
                return -2;
            memcpy(num, eq + 1, nl);
            num[nl] = 0;
            char *e;
            long long v = strtoll(num, &e, 10);
            return *e || v < 0 ? -2 : v;
        }
        p = end ? end + 1 : NULL;
    }
    return -1;
}

static ts_status add_input(imp *im, const Onnx__ValueInfoProto *vi, ts_tensor_kind kind)
{
    const char *name = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return ts_err_set(im->err, TS_EINPUT, "graph input '%s' is not a tensor", name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    ts_dtype dt = onnx_dtype(tt->elem_type);
    if (dt == TS_DT_UNDEF)
        return ts_err_set(im->err, TS_EINPUT, "graph input '%s' has unsupported element type %d", name,
                          (int)tt->elem_type);
    if (!tt->shape)
        return ts_err_set(im->err, TS_EINPUT, "graph input '%s' has no shape", name);
    if (tt->shape->n_dim > TS_GRAPH_MAX_RANK)
        return ts_err_set(im->err, TS_EINPUT, "graph input '%s' has rank %zu, more than %d", name, tt->shape->n_dim,
                          TS_GRAPH_MAX_RANK);
    int64_t dims[TS_GRAPH_MAX_RANK];
    for (size_t k = 0; k < tt->shape->n_dim; k++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[k];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
            const char *sym = d->dim_param ? d->dim_param : "";
            int64_t v = sym_value(im->dims, sym);
            if (v == -2)
                return ts_err_set(im->err, TS_EINPUT, "the value given for dimension '%s' is not a whole number",
                                  sym);
            if (v < 0)
                return ts_err_set(im->err, TS_EINPUT,
                                  "graph input '%s' has symbolic dimension '%s' (tessera needs static shapes: "
                                  "give %s=N)",
                                  name, sym, sym);
            dims[k] = v;
            continue;
        }
        if (d->value_case != ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE || d->dim_value < 0)
            return ts_err_set(im->err, TS_EINPUT, "graph input '%s' has an unknown dimension %zu", name, k);
        dims[k] = d->dim_value;
    }
    return ts_graph_add_tensor(im->g, name, kind, dt, (int)tt->shape->n_dim, dims, NULL, im->err);
}

static ts_status import_graph(imp *im, const Onnx__ModelProto *m, const ts_onnx_opts *opts)
{
    const Onnx__GraphProto *gp = m->graph;
    ts_status st;
    if (!gp)
        return ts_err_set(im->err, TS_EINPUT, "the model has no graph");
    for (size_t k = 0; k < gp->n_input; k++)
        if (!gp->input[k]->name || !*gp->input[k]->name)
            return ts_err_set(im->err, TS_EINPUT, "graph input %zu has no name", k);
    for (size_t k = 0; k < gp->n_node; k++)
        for (size_t j = 0; j < gp->node[k]->n_input; j++)
            if (!gp->node[k]->input[j])
                return ts_err_set(im->err, TS_EINPUT, "node %zu has a null input", k);
    if ((st = check_supported(im, gp)))
        return st;
    /* Names the caller gives must be graph inputs. */
    for (size_t j = 0; opts && j < opts->ninputs; j++) {
        bool found = false;
        for (size_t k = 0; k < gp->n_input && !found; k++)
            found = !strcmp(gp->input[k]->name, opts->inputs[j]);
        if (!found)
            return ts_err_set(im->err, TS_EINPUT, "no graph input named '%s'", opts->inputs[j]);
    }
    for (size_t k = 0; k < gp->n_initializer; k++) {
        const Onnx__TensorProto *tp = gp->initializer[k];
        if (!tp->name || !*tp->name)
            return ts_err_set(im->err, TS_EINPUT, "initializer %zu has no name", k);
        int id;
        if ((st = tensor_from_proto(im, tp, tp->name, TS_TENSOR_WEIGHT, true, &id)))
            return st;
    }
    bool stripped = gp->n_initializer == 0;
    size_t ndata = 0;
    for (size_t k = 0; k < gp->n_input; k++) {
        const char *name = gp->input[k]->name;
        if (is_initializer(gp, name))
            continue;
        bool data;
        if (opts && opts->ninputs) {
            data = false;
            for (size_t j = 0; j < opts->ninputs; j++)
                data |= !strcmp(name, opts->inputs[j]);
        } else {
            data = !stripped || ndata == 0;
        }
        ndata += data;
        if ((st = add_input(im, gp->input[k], data ? TS_TENSOR_INPUT : TS_TENSOR_WEIGHT)))
            return st;
    }
    for (size_t k = 0; k < gp->n_node; k++) {
        st = import_node(im, gp->node[k]);
        if (im->oom)
            return ts_err_set(im->err, TS_ENOMEM, "out of memory importing node '%s'",
                              gp->node[k]->name ? gp->node[k]->name : "?");
        if (st)
            return st;
    }
    for (size_t k = 0; k < gp->n_output; k++) {
        const char *name = gp->output[k]->name;
        int id = name ? lookup(im, name) : -1;
        if (id < 0)
            return ts_err_set(im->err, TS_EINPUT, "graph output '%s' is not produced by any node",
                              name ? name : "?");
        ts_graph_mark_output(im->g, id);
    }
    if (im->hook && im->hook->before_finalize && im->hook->before_finalize(im->hook->ud, im->g, im->err))
        return im->err->status;
    return ts_graph_finalize(im->g, im->err);
}

static ts_status load_mem(const void *data, size_t len, const char *name, const ts_onnx_opts *opts,
                          const ts_onnx_hook *hook, ts_graph **out, ts_err *err)
{
    *out = NULL;
    const char *file = name ? name : "<memory>";
    bool pb_oom = false;
    ProtobufCAllocator pb_allocator = {pb_alloc, pb_free, &pb_oom};
    Onnx__ModelProto *m = onnx__model_proto__unpack(&pb_allocator, len, data);
    if (!m && pb_oom)
        return ts_err_set(err, TS_ENOMEM, "out of memory reading %s", file);
    if (!m)
        return ts_err_at(err, TS_EINPUT, file, 0, 0, "not a valid onnx model (malformed protobuf)");
    imp im = {0};
    im.file = file;
    im.err = err;
    im.opset = 13;
    im.dims = opts ? opts->dims : NULL;
    im.hook = hook;
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        if ((!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) && o->has_version)
            im.opset = o->version;
    }
    /* The graph is named after the file ("resnet50" for "models/resnet50.onnx"); exporters give
     * graphs generic names such as "torch_jit". */
    char gname[256];
    const char *base = strrchr(file, '/');
    snprintf(gname, sizeof gname, "%s", base ? base + 1 : file);
    char *dot = strrchr(gname, '.');
    if (dot && dot != gname)
        *dot = 0;
    ts_status st;
    im.g = ts_graph_create(gname);
    if (!im.g)
        st = ts_err_set(err, TS_ENOMEM, "out of memory importing %s", file);
    else
        st = import_graph(&im, m, opts);
    for (size_t k = 0; k < im.nal; k++)
        ts_free(im.al[k].name);
    ts_free(im.al);
    onnx__model_proto__free_unpacked(m, &pb_allocator);
    if (st) {
        ts_graph_destroy(im.g);
        if (!err->file[0])
            snprintf(err->file, sizeof err->file, "%s", file);
        return st;
    }
    *out = im.g;
    return TS_OK;
}

ts_status ts_onnx_load_mem(const void *data, size_t len, const char *name, const ts_onnx_opts *opts,
                           ts_graph **out, ts_err *err)
{
    return load_mem(data, len, name, opts, NULL, out, err);
}

ts_status ts_onnx_load_hooked(const char *path, const ts_onnx_opts *opts, const ts_onnx_hook *hook, ts_graph **out,
                              ts_err *err)
{
    char *data;
    size_t len;
    *out = NULL;
    ts_status st = ts_read_file(path, &data, &len, err);
    if (st)
        return st;
    st = load_mem(data, len, path, opts, hook, out, err);
    ts_free(data);
    return st;
}

ts_status ts_onnx_load(const char *path, const ts_onnx_opts *opts, ts_graph **out, ts_err *err)
{
    return ts_onnx_load_hooked(path, opts, NULL, out, err);
}
