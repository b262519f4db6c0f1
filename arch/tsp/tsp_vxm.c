/* arch/tsp/tsp_vxm.c — the VXM: element arithmetic of the ALUs (integers wrapping or saturating,
 * f16 and f32, conversions) and the superlane step that reads the sources, writes the ALU latch
 * (chaining) and schedules the result onto the streams. */
#include "arch/tsp/tsp_model.h"

#include <math.h>
#include <string.h>

static int64_t sext(uint32_t v, int type)
{
    switch (type) {
    case TSP_I8: return (int8_t)(uint8_t)v;
    case TSP_I16: return (int16_t)(uint16_t)v;
    default: return (int32_t)v;
    }
}

static uint32_t int_out(int64_t v, int type, bool sat)
{
    int64_t lo = type == TSP_I8 ? INT8_MIN : type == TSP_I16 ? INT16_MIN : INT32_MIN;
    int64_t hi = type == TSP_I8 ? INT8_MAX : type == TSP_I16 ? INT16_MAX : INT32_MAX;
    if (sat)
        v = v < lo ? lo : v > hi ? hi : v;
    uint32_t mask = type == TSP_I8 ? 0xffu : type == TSP_I16 ? 0xffffu : 0xffffffffu;
    return (uint32_t)v & mask;
}

static float fl_in(uint32_t v, int type)
{
    if (type == TSP_F16)
        return ts_f16_to_f32((uint16_t)v);
    float f;
    memcpy(&f, &v, 4);
    return f;
}

static uint32_t fl_out(float f, int type)
{
    if (type == TSP_F16)
        return ts_f32_to_f16(f);
    uint32_t v;
    memcpy(&v, &f, 4);
    return v;
}

/* Convert one element between types: floats round to nearest even; integers saturate; a NaN
 * becomes 0. */
static uint32_t convert(uint32_t v, int to, int from)
{
    if (is_float(from)) {
        float f = fl_in(v, from);
        if (is_float(to))
            return fl_out(f, to);
        if (isnan(f))
            return 0;
        double r = nearbyint((double)f);
        r = r < -2147483648.0 ? -2147483648.0 : r > 2147483647.0 ? 2147483647.0 : r;
        return int_out((int64_t)r, to, true);
    }
    int64_t x = sext(v, from);
    if (is_float(to))
        return fl_out((float)x, to);
    return int_out(x, to, true);
}

/* One element of a VXM op other than cvt. *bad is set for an op and type with no case here (the
 * loader keeps the saturating ops to integers and tanh, exp and rsqrt to floats: TSP_F_INT,
 * TSP_F_FLOAT), so a .def row without a case fails instead of giving zeros. */
static inline __attribute__((always_inline)) uint32_t vxm_elem(int op, int type, uint32_t a, uint32_t b,
                                                                int32_t imm, bool *bad)
{
    if (is_float(type)) {
        float x = fl_in(a, type), y = fl_in(b, type), r;
        switch (op) {
        case TSP_OP_ADD: r = x + y; break;
        case TSP_OP_SUB: r = x - y; break;
        case TSP_OP_MUL: r = x * y; break;
        case TSP_OP_NEG: r = -x; break;
        case TSP_OP_RELU: r = x > 0 ? x : 0.0f; break;
        case TSP_OP_TANH: r = tanhf(x); break;
        case TSP_OP_EXP: r = expf(x); break;
        case TSP_OP_RSQRT: r = 1.0f / sqrtf(x); break;
        case TSP_OP_MASK: return a & (uint32_t)imm & (type == TSP_F16 ? 0xffffu : 0xffffffffu);
        default: *bad = true; return 0;
        }
        return fl_out(r, type);
    }
    int64_t x = sext(a, type), y = sext(b, type);
    switch (op) {
    case TSP_OP_ADD: return int_out(x + y, type, false);
    case TSP_OP_ADDS: return int_out(x + y, type, true);
    case TSP_OP_SUB: return int_out(x - y, type, false);
    case TSP_OP_SUBS: return int_out(x - y, type, true);
    case TSP_OP_MUL: return int_out((int64_t)((uint64_t)x * (uint64_t)y), type, false);
    case TSP_OP_MULS: return int_out(x * y, type, true);
    case TSP_OP_NEG: return int_out(-x, type, false);
    case TSP_OP_MASK: return int_out(x, type, false) & (uint32_t)imm;
    case TSP_OP_RELU: return int_out(x > 0 ? x : 0, type, false);
    default: *bad = true; return 0;
    }
}

/* vxm_elem over 16 lanes with op and type constants where it is expanded (vxm_lanes16), so that
 * the compiler folds its switches out of the loop: the same results, element by element. */
static inline __attribute__((always_inline)) void vxm_loop16(int op, int type, const uint32_t *a, const uint32_t *b,
                                                             int32_t imm, uint32_t *r, bool *bad)
{
    for (uint32_t x = 0; x < 16; x++)
        r[x] = vxm_elem(op, type, a[x], b[x], imm, bad);
}

#define VXM_OP16(OP)                                                                                    \
    case OP:                                                                                            \
        switch (type) {                                                                                 \
        case TSP_I8: vxm_loop16(OP, TSP_I8, a, b, imm, r, bad); break;                                  \
        case TSP_I16: vxm_loop16(OP, TSP_I16, a, b, imm, r, bad); break;                                \
        case TSP_I32: vxm_loop16(OP, TSP_I32, a, b, imm, r, bad); break;                                \
        case TSP_F16: vxm_loop16(OP, TSP_F16, a, b, imm, r, bad); break;                                \
        default: vxm_loop16(OP, TSP_F32, a, b, imm, r, bad); break;                                     \
        }                                                                                               \
        break;

/* The 16 lanes of a VXM op other than cvt (b: zeros for a unary op); *bad as in vxm_elem. */
static void vxm_lanes16(int op, int type, const uint32_t *a, const uint32_t *b, int32_t imm, uint32_t *r, bool *bad)
{
    switch (op) {
    VXM_OP16(TSP_OP_ADD)
    VXM_OP16(TSP_OP_ADDS)
    VXM_OP16(TSP_OP_SUB)
    VXM_OP16(TSP_OP_SUBS)
    VXM_OP16(TSP_OP_MUL)
    VXM_OP16(TSP_OP_MULS)
    VXM_OP16(TSP_OP_NEG)
    VXM_OP16(TSP_OP_MASK)
    VXM_OP16(TSP_OP_RELU)
    default: vxm_loop16(op, type, a, b, imm, r, bad); break; /* tanh, exp, rsqrt: the call dominates */
    }
}
#undef VXM_OP16

static void count_ev(ts_model *m, int unit, int type, int cls, double n) { m->ev[unit][type][cls] += n; }

ts_status ts_tsp_step_vxm(ts_model *m, tsp_fl *f, ts_err *err)
{
    const ts_insn *in = &f->in;
    int op = in->op, k = (int)f->k;
    uint32_t a[64], b[64], r[64];
    const int32_t *o = in->a;
    int type, dst, src_t;
    uint32_t itag, otag;
    ts_status rc;
    if (op == TSP_OP_CVT) {
        type = o[0] - TSP_REG_TYPE;
        src_t = o[1] - TSP_REG_TYPE;
        dst = o[2];
        itag = (uint32_t)o[4];
        otag = (uint32_t)o[5];
        if ((rc = ts_tsp_read_elems(m, f, o[3], src_t, (uint32_t)k, itag, a, err)) != TS_OK)
            return rc;
        for (uint32_t x = 0; x < m->L; x++)
            r[x] = convert(a[x], type, src_t);
    } else {
        type = o[0] - TSP_REG_TYPE;
        dst = o[1];
        bool binary = f->d.binary;
        int32_t imm = op == TSP_OP_MASK ? o[3] : 0;
        itag = (uint32_t)(binary || op == TSP_OP_MASK ? o[4] : o[3]);
        otag = (uint32_t)(binary || op == TSP_OP_MASK ? o[5] : o[4]);
        if ((rc = ts_tsp_read_elems(m, f, o[2], type, (uint32_t)k, itag, a, err)) != TS_OK)
            return rc;
        if (binary && (rc = ts_tsp_read_elems(m, f, o[3], type, (uint32_t)k, itag, b, err)) != TS_OK)
            return rc;
        bool bad = false;
        if (m->L == 16) {
            if (!binary)
                for (uint32_t x = 0; x < 16; x++)
                    b[x] = 0;
            vxm_lanes16(op, type, a, b, imm, r, &bad);
        } else {
            for (uint32_t x = 0; x < m->L; x++)
                r[x] = vxm_elem(op, type, a[x], binary ? b[x] : 0, imm, &bad);
        }
        if (bad)
            return ts_tsp_no_case(m, f, err);
    }
    if (f->d.ev)
        count_ev(m, UK_VXM, type, f->d.ev == 2 ? EV_MUL : EV_ADD, m->L);
    /* the ALU latch (chaining within a lane, research §1.6) */
    uint8_t lb[4 * 64];
    for (uint32_t x = 0; x < m->L; x++)
        memcpy(lb + 4 * x, &r[x], 4);
    tsp_pw w = {.kind = PW_LATCH, .k = (uint16_t)k, .a = m->lay->qsub[f->q], .tag = otag,
                .prod = PROD(f->q, f->pc), .len = 4 * m->L, .type = (uint8_t)type};
    if ((rc = ts_tsp_pw_add(m, f->t0 + f->dfunc + (uint64_t)k, &w, lb, err)) != TS_OK)
        return rc;
    if (dst != TSP_REG_NUL)
        return ts_tsp_write_elems(m, f, dst, type, (uint32_t)k, otag, r, err);
    return TS_OK;
}

