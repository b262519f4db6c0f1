/* workloads/graph_values.c — tensors given values by name, and read out (graph_values.h). */
#include "workloads/graph_values.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/alloc.h"
#include "core/buf.h"
#include "core/half.h"
#include "workloads/lower/fill.h"

static void shape_text(char *buf, size_t n, int rank, const int64_t *dims)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* The npy dtype of a graph dtype; -1 for those an archive does not hold (i16, bf16). */
static int npy_of(ts_dtype dt)
{
    switch (dt) {
    case TS_DT_F32: return TS_NPY_F32;
    case TS_DT_F16: return TS_NPY_F16;
    case TS_DT_F64: return TS_NPY_F64;
    case TS_DT_I8: return TS_NPY_I8;
    case TS_DT_U8: return TS_NPY_U8;
    case TS_DT_I32: return TS_NPY_I32;
    case TS_DT_I64: return TS_NPY_I64;
    case TS_DT_BOOL: return TS_NPY_BOOL;
    default: return -1;
    }
}

static bool is_float_npy(ts_npy_dtype d) { return d == TS_NPY_F32 || d == TS_NPY_F16 || d == TS_NPY_F64; }

/* Convert element i of a to dt at dst; false (with why) when it does not convert. */
static bool convert(const ts_npy_array *a, uint64_t i, ts_dtype dt, unsigned char *dst, char *why, size_t n)
{
    /* an i64 above 2^53 would lose bits through double: take it exactly */
    if (a->dtype == TS_NPY_I64 && dt == TS_DT_I64) {
        memcpy(dst, (const char *)a->data + 8 * i, 8);
        return true;
    }
    double v = ts_npy_get(a, i);
    if (dt == TS_DT_F32) {
        float f = (float)v;
        memcpy(dst, &f, 4);
        return true;
    }
    if (dt == TS_DT_F16) {
        uint16_t h = ts_f32_to_f16((float)v);
        memcpy(dst, &h, 2);
        return true;
    }
    if (dt == TS_DT_F64) {
        memcpy(dst, &v, 8);
        return true;
    }
    if (is_float_npy(a->dtype) && (!isfinite(v) || v != floor(v))) {
        snprintf(why, n, "element %" PRIu64 " (%.9g) is not a whole number, as the tensor's %s needs", i, v,
                 ts_dtype_name(dt));
        return false;
    }
    double lo, hi;
    switch (dt) {
    case TS_DT_I8: lo = -128, hi = 127; break;
    case TS_DT_U8: lo = 0, hi = 255; break;
    case TS_DT_I16: lo = -32768, hi = 32767; break;
    case TS_DT_I32: lo = -2147483648.0, hi = 2147483647.0; break;
    case TS_DT_I64: lo = -9223372036854775808.0, hi = 9223372036854774784.0; break;
    case TS_DT_BOOL: lo = 0, hi = 1; break;
    default:
        snprintf(why, n, "a %s tensor takes no values", ts_dtype_name(dt));
        return false;
    }
    if (v < lo || v > hi) {
        snprintf(why, n, "element %" PRIu64 " (%.17g) is out of the tensor's %s range", i, v, ts_dtype_name(dt));
        return false;
    }
    switch (dt) {
    case TS_DT_I8: { int8_t x = (int8_t)v; memcpy(dst, &x, 1); break; }
    case TS_DT_U8: case TS_DT_BOOL: { uint8_t x = (uint8_t)v; memcpy(dst, &x, 1); break; }
    case TS_DT_I16: { int16_t x = (int16_t)v; memcpy(dst, &x, 2); break; }
    case TS_DT_I32: { int32_t x = (int32_t)v; memcpy(dst, &x, 4); break; }
    default: { int64_t x = (int64_t)v; memcpy(dst, &x, 8); break; }
    }
    return true;
}

/* One array into tensor id. */
static ts_status set_one(ts_graph *g, int id, const ts_npy_array *a, const char *file, ts_err *err)
{
    const ts_graph_tensor *t = ts_graph_get_tensor(g, id);
    if (t->kind != TS_TENSOR_INPUT && t->kind != TS_TENSOR_WEIGHT)
        return ts_err_at(err, TS_EINPUT, file, 0, 0, "entry '%s': tensor '%s' is %s %s, not an input or a weight",
                         a->name, t->name, t->kind == TS_TENSOR_ACTIVATION ? "an" : "a", ts_tensor_kind_name(t->kind));
    bool same = t->rank == a->rank;
    for (int i = 0; same && i < a->rank; i++)
        same = t->dims[i] == a->dims[i];
    if (!same) {
        char ws[200], gs[200];
        shape_text(ws, sizeof ws, t->rank, t->dims);
        shape_text(gs, sizeof gs, a->rank, a->dims);
        return ts_err_at(err, TS_EINPUT, file, 0, 0, "entry '%s': shape %s differs from the tensor's %s", a->name, gs,
                         ws);
    }
    size_t es = ts_dtype_size(t->dtype);
    uint64_t n = ts_npy_elems(a);
    if (!es || t->dtype == TS_DT_BF16)
        return ts_err_at(err, TS_EINPUT, file, 0, 0, "entry '%s': a %s tensor takes no values", a->name,
                         ts_dtype_name(t->dtype));
    unsigned char *buf = ts_malloc(n ? (size_t)(n * es) : 1);
    if (!buf)
        return ts_err_set(err, TS_ENOMEM, "out of memory for the values of '%s'", a->name);
    char why[256];
    for (uint64_t i = 0; i < n; i++)
        if (!convert(a, i, t->dtype, buf + i * es, why, sizeof why)) {
            ts_free(buf);
            return ts_err_at(err, TS_EINPUT, file, 0, 0, "entry '%s': %s", a->name, why);
        }
    ts_status rc = ts_graph_set_data(g, id, buf, (size_t)(n * es), err);
    ts_free(buf);
    return rc;
}

ts_status ts_graph_values_set(ts_graph *g, const ts_npz *z, const char *file, bool require_inputs, ts_err *err)
{
    for (size_t k = 0; k < z->n; k++) {
        const ts_npy_array *a = &z->v[k];
        int id = ts_graph_find(g, a->name);
        if (id < 0)
            return ts_err_at(err, TS_EINPUT, file, 0, 0, "entry '%s': the model has no tensor of this name", a->name);
        ts_status rc = set_one(g, id, a, file, err);
        if (rc != TS_OK)
            return rc;
    }
    for (size_t id = 0; require_inputs && id < ts_graph_tensor_count(g); id++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)id);
        if (t->kind == TS_TENSOR_INPUT && !ts_npz_find(z, t->name))
            return ts_err_at(err, TS_EINPUT, file, 0, 0, "no values for the data input '%s'", t->name);
    }
    return TS_OK;
}

ts_status ts_graph_values_fill(ts_graph *g, ts_err *err)
{
    for (size_t id = 0; id < ts_graph_tensor_count(g); id++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)id);
        if ((t->kind != TS_TENSOR_INPUT && t->kind != TS_TENSOR_WEIGHT) || t->data || t->rank < 0 ||
            (t->dtype != TS_DT_F32 && t->dtype != TS_DT_F16))
            continue;
        uint64_t n = (uint64_t)ts_graph_tensor_elems(t);
        size_t es = ts_dtype_size(t->dtype);
        unsigned char *buf = ts_malloc(n ? (size_t)(n * es) : 1);
        if (!buf)
            return ts_err_set(err, TS_ENOMEM, "out of memory for the values of '%s'", t->name);
        for (uint64_t i = 0; i < n; i++) {
            float f = ts_fill_f32((int)id, i);
            if (t->dtype == TS_DT_F16) {
                uint16_t h = ts_f32_to_f16(f);
                memcpy(buf + 2 * i, &h, 2);
            } else {
                memcpy(buf + 4 * i, &f, 4);
            }
        }
        ts_status rc = ts_graph_set_data(g, (int)id, buf, (size_t)(n * es), err);
        ts_free(buf);
        if (rc != TS_OK)
            return rc;
    }
    return TS_OK;
}

ts_status ts_graph_values_get(const ts_graph *g, ts_npz *z, ts_err *err)
{
    for (size_t id = 0; id < ts_graph_tensor_count(g); id++) {
        const ts_graph_tensor *t = ts_graph_get_tensor(g, (int)id);
        int nd = npy_of(t->dtype);
        if ((t->kind != TS_TENSOR_INPUT && t->kind != TS_TENSOR_WEIGHT) || !t->data || nd < 0 || t->rank < 0 ||
            t->rank > TS_NPY_MAX_RANK)
            continue;
        ts_npy_array *v = ts_realloc(z->v, (z->n + 1) * sizeof *v);
        if (!v)
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        z->v = v;
        ts_npy_array *a = &z->v[z->n];
        memset(a, 0, sizeof *a);
        a->dtype = (ts_npy_dtype)nd;
        a->rank = t->rank;
        memcpy(a->dims, t->dims, sizeof(int64_t) * (size_t)t->rank);
        a->nbytes = (size_t)ts_graph_tensor_elems(t) * ts_dtype_size(t->dtype);
        a->name = ts_strdup(t->name);
        a->data = ts_malloc(a->nbytes ? a->nbytes : 1);
        if (!a->name || !a->data) {
            ts_npy_array_free(a);
            return ts_err_set(err, TS_ENOMEM, "out of memory");
        }
        memcpy(a->data, t->data, a->nbytes);
        z->n++;
    }
    return TS_OK;
}
