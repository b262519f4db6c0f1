/* workloads/ipu/lower_ipu_eltwise.c — the IPU lowering's vector operators, planner (a): elementwise
 * ops on their input's layout, Softmax and LayerNorm over rows partitioned over tiles, and
 * Transpose (a data movement over the exchange). The routines they share compute exp, 1/x,
 * 1/sqrt(x) and Gelu on a worker's f32 unit (registers in each routine's comment). */
#include "core/alloc.h"
#include "workloads/ipu/lower_ipu_int.h"

/* ---- routines ---- */

/* exp(x) for x in $a1 (x <= 0), result in $a3; uses $a5..$a10, $m9. 2^x·log2e = 2^n · 2^f with n =
 * trunc(y), f in (-1, 0]; 2^f = e^t, t = f·ln 2, by a degree-8 Taylor polynomial (|error| < 1e-7). */
static void emit_exp(lw *L, uint32_t t)
{
    W(t, LDCONST, RA(5), lwi_fbits(-87.0f), 0);
    W(t, F32MAX, RA(1), RA(1), RA(5));
    W(t, LDCONST, RA(5), lwi_fbits(1.44269504f), 0);
    W(t, F32MUL, RA(5), RA(1), RA(5));      /* y */
    W(t, F32TOI32, RA(6), RA(5), 0);        /* n */
    W(t, F32FROMI32, RA(7), RA(6), 0);
    W(t, F32SUB, RA(5), RA(5), RA(7));      /* f */
    W(t, LDCONST, RA(7), lwi_fbits(0.693147181f), 0);
    W(t, F32MUL, RA(5), RA(5), RA(7));      /* t */
    static const double inv_fact[9] = {1, 1, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                       1.0 / 40320};
    W(t, LDCONST, RA(8), lwi_fbits((float)inv_fact[8]), 0);
    int acc = 8;
    for (int d = 7; d >= 0; d--) {
        int nx = acc == 8 ? 9 : 8;
        W(t, LDCONST, RA(nx), lwi_fbits((float)inv_fact[d]), 0);
        W(t, F32MAC, RA(nx), RA(acc), RA(5)); /* c_d + p*t */
        acc = nx;
    }
    W(t, MOV, RM(9), RA(6), 0);
    W(t, ADDI, RM(9), RM(9), 127);
    W(t, SHLI, RM(9), RM(9), 23);
    W(t, MOV, RA(10), RM(9), 0);             /* 2^n */
    W(t, F32MUL, RA(3), RA(acc), RA(10));
}

static size_t exp_len(void) { return 9 + 1 + 16 + 5; }

/* 1/d in $a4 for d > 0 in $a12: bit-trick seed, four Newton steps r = r (2 - d r); uses $a13, $a14,
 * $m8, $m9. */
static void emit_recip(lw *L, uint32_t t)
{
    W(t, MOV, RM(8), RA(12), 0);
    W(t, SETZI, RM(9), 0x7EF311C3, 0);
    W(t, SUB, RM(9), RM(9), RM(8));
    W(t, MOV, RA(4), RM(9), 0);
    W(t, LDCONST, RA(13), lwi_fbits(2.0f), 0);
    for (int i = 0; i < 4; i++) {
        W(t, F32MUL, RA(14), RA(12), RA(4));
        W(t, F32SUB, RA(14), RA(13), RA(14));
        W(t, F32MUL, RA(4), RA(4), RA(14));
    }
}

static size_t recip_len(void) { return 5 + 12; }

/* Gelu (erf form) of $a0 into $a2: 0.5 (x + |x| erf(|x|/sqrt 2)), erf(y) = 1 - q(s) e^(-y^2), s =
 * 1/(1 + p y), q of degree 5 (Abramowitz and Stegun 7.1.26, |error| <= 1.5e-7); uses $a1..$a15,
 * $m8, $m9. */
static void emit_gelu(lw *L, uint32_t t)
{
    static const float c[5] = {0.254829592f, -0.284496736f, 1.421413741f, -1.453152027f, 1.061405429f};
    W(t, SETZI, RA(15), 0, 0);
    W(t, F32SUB, RA(2), RA(15), RA(0));
    W(t, F32MAX, RA(2), RA(0), RA(2));          /* |x| */
    W(t, LDCONST, RA(11), lwi_fbits(0.707106781f), 0);
    W(t, F32MUL, RA(11), RA(2), RA(11));        /* y = |x| / sqrt 2 */
    W(t, F32MUL, RA(1), RA(11), RA(11));
    W(t, F32SUB, RA(1), RA(15), RA(1));         /* -y^2 */
    emit_exp(L, t);                             /* $a3 = e^(-y^2) */
    W(t, LDCONST, RA(12), lwi_fbits(0.3275911f), 0);
    W(t, LDCONST, RA(13), lwi_fbits(1.0f), 0);
    W(t, F32MAC, RA(13), RA(12), RA(11));
    W(t, MOV, RA(12), RA(13), 0);               /* 1 + p y */
    emit_recip(L, t);                           /* $a4 = s */
    W(t, LDCONST, RA(12), lwi_fbits(c[4]), 0);
    int acc = 12;
    for (int d = 3; d >= 0; d--) {
        int nx = acc == 12 ? 13 : 12;
        W(t, LDCONST, RA(nx), lwi_fbits(c[d]), 0);
        W(t, F32MAC, RA(nx), RA(acc), RA(4));
        acc = nx;
    }
    W(t, F32MUL, RA(acc), RA(acc), RA(4));      /* q(s) */
    W(t, F32MUL, RA(acc), RA(acc), RA(3));
    W(t, LDCONST, RA(14), lwi_fbits(1.0f), 0);
    W(t, F32SUB, RA(14), RA(14), RA(acc));      /* erf(y) */
    W(t, F32MUL, RA(2), RA(2), RA(14));
    W(t, F32ADD, RA(2), RA(2), RA(0));
    W(t, LDCONST, RA(14), lwi_fbits(0.5f), 0);
    W(t, F32MUL, RA(2), RA(2), RA(14));
}

static size_t gelu_len(void) { return 7 + exp_len() + 4 + recip_len() + 1 + 8 + 2 + 2 + 2 + 2; }

/* LayerNorm's variance: $a2 (the sum of squared deviations) times $a5 (1 / row length), plus
 * epsilon ($a6 := eps). */
static void emit_variance(lw *L, uint32_t t, float eps)
{
    W(t, F32MUL, RA(2), RA(2), RA(5));
    W(t, LDCONST, RA(6), lwi_fbits(eps), 0);
    W(t, F32ADD, RA(2), RA(2), RA(6));
}

/* LayerNorm's output row: count ($m count_reg) times out = (x - mean) * r * scale + bias, from x at
 * $m4, scale at $m6, bias at $m7 into $m5 (each stepping a word); mean in $a0, r in $a4. */
static void emit_normalise(lw *L, uint32_t t, int count_reg)
{
    W(t, RPT, count_reg, 8, 0);
    W(t, LD32STEP, RA(1), RM(4), 4);
    W(t, F32SUB, RA(1), RA(1), RA(0));
    W(t, F32MUL, RA(1), RA(1), RA(4));
    W(t, LD32STEP, RA(2), RM(6), 4);
    W(t, F32MUL, RA(1), RA(1), RA(2));
    W(t, LD32STEP, RA(3), RM(7), 4);
    W(t, F32ADD, RA(1), RA(1), RA(3));
    W(t, ST32STEP, RA(1), RM(5), 4);
}

/* 1/sqrt($a2) into $a4 (v > 0): seed 0x5F3759DF - bits/2, four Newton steps r = r (1.5 - v/2 r^2);
 * uses $a6..$a9 and the $m registers ma, mb. */
static void emit_rsqrt(lw *L, uint32_t t, int ma, int mb)
{
    W(t, MOV, ma, RA(2), 0);
    W(t, SHRI, ma, ma, 1);
    W(t, SETZI, mb, 0x5F3759DF, 0);
    W(t, SUB, mb, mb, ma);
    W(t, MOV, RA(4), mb, 0);
    W(t, LDCONST, RA(6), lwi_fbits(0.5f), 0);
    W(t, F32MUL, RA(7), RA(2), RA(6));
    W(t, LDCONST, RA(8), lwi_fbits(1.5f), 0);
    for (int i = 0; i < 4; i++) {
        W(t, F32MUL, RA(9), RA(4), RA(4));
        W(t, F32MUL, RA(9), RA(9), RA(7));
        W(t, F32SUB, RA(9), RA(8), RA(9));
        W(t, F32MUL, RA(4), RA(4), RA(9));
    }
}

/* ---- elementwise ---- */

/* The ranges of x on each of its tiles (blocked: the tile's channels, each a run of its pixels)
 * and the elements there, cnts[t]. */
void lwi_eltwise_ranges(const lw_place *P, uint64_t total, lw_scr *sc, uint64_t *cnts)
{
    for (uint32_t t = 0; t < P->ntiles; t++) {
        if (P->inner) {
            uint64_t c0 = t / P->nrb * P->cb, p0 = t % P->nrb * P->pb, C = total / P->inner;
            uint64_t nc = c0 < C ? (C - c0 < P->cb ? C - c0 : P->cb) : 0;
            uint64_t len = P->inner - p0 < P->pb ? P->inner - p0 : P->pb;
            sc->lo[t] = c0 * P->inner + p0;
            sc->hi[t] = sc->lo[t] + (nc ? len : 0);
            sc->nr[t] = (uint32_t)nc;
            cnts[t] = nc ? (nc - 1) * P->pb + len : 0;
        } else {
            sc->lo[t] = t * P->chunk < total ? t * P->chunk : total;
            sc->hi[t] = (t + 1) * P->chunk < total ? (t + 1) * P->chunk : total;
            sc->nr[t] = 1;
            cnts[t] = sc->hi[t] - sc->lo[t];
        }
    }
}

/* A broadcast operand B (tensor y, nb elements) as initial data: per tile, b[e mod nb] for each of
 * x's elements e there, at x's offsets (Div: the reciprocals); sc->where[t] its address. */
static ts_status eltwise_bcast(lw *L, const ts_graph_node *n, const lw_place *P, int y, lw_scr *sc,
                               const uint64_t *cnts)
{
    const ts_graph_tensor *B = ts_graph_get_tensor(L->g, y);
    uint64_t nb = (uint64_t)ts_graph_tensor_elems(B);
    uint64_t baddr = lwi_salloc(L, P->chunk * 4);
    float *v = ts_calloc(P->chunk ? P->chunk : 1, 4);
    if (!v)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the operand of '%s'", n->name);
    ts_status rc = TS_OK;
    for (uint32_t t = 0; t < P->ntiles && rc == TS_OK; t++) {
        uint64_t len = sc->hi[t] - sc->lo[t], dstr = P->inner ? P->pb : 0;
        for (uint32_t j = 0; j < sc->nr[t]; j++)
            for (uint64_t i = 0; i < len; i++) {
                float b = ts_fill_value_f32(B, y, (sc->lo[t] + j * P->inner + i) % nb);
                v[j * dstr + i] = n->op == TS_OP_DIV ? (float)(1.0 / (double)b) : b;
            }
        sc->where[t] = baddr;
        rc = lwi_seg(L, P->t0 + t, baddr, v, cnts[t] * 4);
    }
    ts_free(v);
    return rc;
}

/* The IR's HardSwish when it has one (matched by name, so that this file builds whether or not the
 * IR lists the op); TS_OP_COUNT otherwise. */
ts_graph_op lwi_op_hardswish(void)
{
    ts_graph_op op;
    return ts_graph_op_parse("HardSwish", &op) == 0 ? op : TS_OP_COUNT;
}

bool lwi_unary_op(ts_graph_op op)
{
    return op == TS_OP_RELU || op == TS_OP_GELU || op == TS_OP_CLIP || op == TS_OP_SIGMOID || op == TS_OP_TANH ||
           op == lwi_op_hardswish();
}

/* $a2 := |$a2| with the sign of $a0 (uses $m10, $m11). */
static void emit_copysign(lw *L, uint32_t t)
{
    W(t, MOV, RM(10), RA(0), 0);
    W(t, SHRI, RM(10), RM(10), 31);
    W(t, SHLI, RM(10), RM(10), 31);
    W(t, MOV, RM(11), RA(2), 0);
    W(t, OR, RM(11), RM(11), RM(10));
    W(t, MOV, RA(2), RM(11), 0);
}

/* Sigmoid (tanh: false) or Tanh of $a0 into $a2 from e = exp(-|x|) (tanh: exp(-2|x|)), so that exp
 * never overflows: sigmoid = 1/2 + sign(x) (1/(1 + e) - 1/2), tanh = sign(x) (1 - e) / (1 + e);
 * uses $a1..$a15, $m8..$m11. */
static void emit_sigmoid_tanh(lw *L, uint32_t t, bool tanh_)
{
    W(t, SETZI, RA(15), 0, 0);
    W(t, F32SUB, RA(2), RA(15), RA(0));
    W(t, F32MIN, RA(1), RA(0), RA(2));          /* -|x| */
    if (tanh_)
        W(t, F32ADD, RA(1), RA(1), RA(1));
    emit_exp(L, t);                             /* $a3 = e */
    W(t, LDCONST, RA(12), lwi_fbits(1.0f), 0);
    W(t, F32ADD, RA(12), RA(12), RA(3));
    emit_recip(L, t);                           /* $a4 = 1 / (1 + e) */
    if (tanh_) {
        W(t, LDCONST, RA(11), lwi_fbits(1.0f), 0);
        W(t, F32SUB, RA(11), RA(11), RA(3));
        W(t, F32MUL, RA(2), RA(11), RA(4));
        emit_copysign(L, t);
    } else {
        W(t, LDCONST, RA(11), lwi_fbits(0.5f), 0);
        W(t, F32SUB, RA(2), RA(4), RA(11));
        emit_copysign(L, t);
        W(t, F32ADD, RA(2), RA(2), RA(11));
    }
}

/* Gelu, tanh form, of $a0 into $a2: 0.5 x (1 + tanh(u)) = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715
 * x^3), the sigmoid from exp(-|2u|) as above; x waits in $m12. Uses $a1..$a15, $m8..$m12. */
static void emit_gelu_tanh(lw *L, uint32_t t)
{
    W(t, MOV, RM(12), RA(0), 0);
    W(t, F32MUL, RA(13), RA(0), RA(0));
    W(t, LDCONST, RA(14), lwi_fbits(0.044715f), 0);
    W(t, LDCONST, RA(12), lwi_fbits(1.0f), 0);
    W(t, F32MAC, RA(12), RA(14), RA(13));        /* 1 + 0.044715 x^2 */
    W(t, LDCONST, RA(14), lwi_fbits(1.5957691216f), 0);
    W(t, F32MUL, RA(12), RA(12), RA(14));
    W(t, F32MUL, RA(0), RA(12), RA(0));          /* 2u */
    emit_sigmoid_tanh(L, t, false);
    W(t, MOV, RA(0), RM(12), 0);
    W(t, F32MUL, RA(2), RA(2), RA(0));
}

/* The loop of a one-operand op over $m4 elements from $m2 into $m3: Relu, Clip (min, max), HardSwish
 * (x relu6(x + 3) / 6, times an f32 1/6), Gelu (erf or tanh form), Sigmoid, Tanh. */
static void eltwise_unary(lw *L, uint32_t t, const ts_graph_node *n)
{
    int op = n->op;
    if (op == TS_OP_GELU || op == TS_OP_SIGMOID || op == TS_OP_TANH) {
        size_t rpt = W(t, RPT, RM(4), (int32_t)(gelu_len() + 2), 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        if (op == TS_OP_GELU && n->attrs.approximate_tanh)
            emit_gelu_tanh(L, t);
        else if (op == TS_OP_GELU)
            emit_gelu(L, t);
        else
            emit_sigmoid_tanh(L, t, op == TS_OP_TANH);
        size_t end = W(t, ST32STEP, RA(2), RM(3), 4);
        if (!L->oom) /* the body's length, as emitted */
            LWT(t).wrk.v[rpt].a[1] = (int32_t)(end - rpt);
    } else if (op == TS_OP_CLIP) {
        W(t, LDCONST, RA(1), lwi_fbits((float)n->attrs.min), 0);
        W(t, LDCONST, RA(5), lwi_fbits((float)n->attrs.max), 0);
        W(t, RPT, RM(4), 4, 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        W(t, F32MAX, RA(0), RA(0), RA(1));
        W(t, F32MIN, RA(0), RA(0), RA(5));
        W(t, ST32STEP, RA(0), RM(3), 4);
    } else if (op != TS_OP_RELU) { /* HardSwish */
        W(t, LDCONST, RA(1), lwi_fbits(3.0f), 0);
        W(t, SETZI, RA(5), 0, 0);
        W(t, LDCONST, RA(6), lwi_fbits(6.0f), 0);
        W(t, LDCONST, RA(7), lwi_fbits(1.0f / 6.0f), 0);
        W(t, RPT, RM(4), 7, 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        W(t, F32ADD, RA(2), RA(0), RA(1));
        W(t, F32MAX, RA(2), RA(2), RA(5));
        W(t, F32MIN, RA(2), RA(2), RA(6));
        W(t, F32MUL, RA(2), RA(2), RA(0));
        W(t, F32MUL, RA(2), RA(2), RA(7));
        W(t, ST32STEP, RA(2), RM(3), 4);
    } else {
        W(t, SETZI, RA(1), 0, 0);
        W(t, RPT, RM(4), 3, 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        W(t, F32MAX, RA(0), RA(0), RA(1));
        W(t, ST32STEP, RA(0), RM(3), 4);
    }
}

/* Tile t's workers on its cnt elements at x (and at b for two operands) into out, every worker a
 * block of ceil(cnt / workers) elements (the last blocks overlap). */
static void eltwise_kernel(lw *L, uint32_t t, const ts_graph_node *n, bool two, uint64_t x, uint64_t b, uint64_t out,
                           uint64_t cnt)
{
    int op = n->op;
    uint32_t rw = (uint32_t)ts_geom_cdiv(cnt, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)cnt, rw);
    W(t, SHLI, RM(1), RM(1), 2);
    W(t, SETZI, RM(2), (int32_t)x, 0);
    W(t, ADD, RM(2), RM(2), RM(1));
    W(t, SETZI, RM(3), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(1));
    W(t, SETZI, RM(4), (int32_t)rw, 0);
    if (two) {
        W(t, SETZI, RM(5), (int32_t)b, 0);
        W(t, ADD, RM(5), RM(5), RM(1));
        W(t, RPT, RM(4), 4, 0);
        W(t, LD32STEP, RA(0), RM(2), 4);
        W(t, LD32STEP, RA(1), RM(5), 4);
        if (op == TS_OP_ADD)
            W(t, F32ADD, RA(0), RA(0), RA(1));
        else if (op == TS_OP_SUB)
            W(t, F32SUB, RA(0), RA(0), RA(1));
        else
            W(t, F32MUL, RA(0), RA(0), RA(1));
        W(t, ST32STEP, RA(0), RM(3), 4);
    } else
        eltwise_unary(L, t, n);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* Elementwise ops on x's chunks: Relu, Gelu, Clip, Sigmoid, Tanh, HardSwish; Add, Sub, Mul of two tensors of the same shape, and
 * Add, Sub, Mul, Div by a weight or constant broadcast over x (its elements the trailing axes of
 * x, or one value). The broadcast operand is initial data arranged per tile as x's elements there
 * (Div: its f32 reciprocals, so x / b is computed as x * (1/b)). */
ts_status lwi_lower_eltwise(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    /* Add and Mul of a weight or constant and an activation: the activation is x */
    bool swap = n->nin == 2 && (n->op == TS_OP_ADD || n->op == TS_OP_MUL) &&
                ts_graph_get_tensor(L->g, n->in[0])->kind != TS_TENSOR_ACTIVATION &&
                ts_graph_get_tensor(L->g, n->in[0])->kind != TS_TENSOR_INPUT;
    int x = n->in[swap ? 1 : 0], y = n->nin == 2 ? n->in[swap ? 0 : 1] : -1;
    ts_status rc = lwi_need_placed(L, n, x);
    if (rc != TS_OK)
        return rc;
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, x);
    uint64_t total = (uint64_t)ts_graph_tensor_elems(X);
    const lw_place P = L->pl[x];
    bool two = n->nin == 2, bcast = false;
    const ts_graph_tensor *B = two ? ts_graph_get_tensor(L->g, y) : NULL;
    uint64_t nb = B ? (uint64_t)ts_graph_tensor_elems(B) : 0;
    if (two && (B->kind == TS_TENSOR_WEIGHT || B->kind == TS_TENSOR_CONST)) {
        bcast = true;
        int64_t tail = 1; /* nb must be the product of x's last axes (after B's leading 1s) */
        bool ok = nb == 1;
        for (int a = X->rank - 1; a >= 0 && !ok && tail < (int64_t)nb; a--)
            ok = (tail *= X->dims[a]) == (int64_t)nb;
        if (!ok)
            return lwi_unsupported(L, n, "a broadcast operand that is not one value or x's trailing axes");
    } else if (two) {
        if (nb != total)
            return lwi_unsupported(L, n, "broadcasting an activation");
        if (n->op == TS_OP_DIV)
            return lwi_unsupported(L, n, "dividing by an activation");
        if ((rc = lwi_need_placed(L, n, y)) != TS_OK)
            return rc;
    }
    uint32_t tn = P.ntiles;
    uint64_t *cnts = ts_calloc(tn ? tn : 1, sizeof *cnts);
    if (!cnts)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory lowering '%s'", n->name);
    lwi_eltwise_ranges(&P, total, sc, cnts);
    L->base = P.t0; /* on x's tiles */
    if (two && !bcast)
        rc = lwi_gather(L, y, tn, sc->lo, sc->hi, sc->nr, P.inner, P.pb, false, sc->where);
    else if (bcast)
        rc = eltwise_bcast(L, n, &P, y, sc, cnts);
    if (rc != TS_OK) {
        ts_free(cnts);
        return rc;
    }
    uint64_t out = lwi_alloc(L, P.chunk * 4);
    for (uint32_t t = 0; t < tn; t++)
        if (cnts[t])
            eltwise_kernel(L, P.t0 + t, n, two, P.addr, two ? sc->where[t] : 0, out, cnts[t]);
    ts_free(cnts);
    lwi_use_tiles(L, tn);
    L->pl[n->out[0]] = P;
    L->pl[n->out[0]].addr = out;
    lwi_sync_all(L);
    return TS_OK;
}

/* ---- Softmax ---- */

/* Softmax over the last axis: rows partitioned over tiles; per row max, exp and sum, 1/sum by
 * Newton's iteration, scale. */
ts_status lwi_lower_softmax(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    int64_t axis = ts_graph_norm_axis(n->attrs.axis, X->rank);
    if (axis != X->rank - 1)
        return lwi_unsupported(L, n, "an axis other than the last");
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t Lw = (uint64_t)X->dims[X->rank - 1], R = (uint64_t)ts_graph_tensor_elems(X) / Lw;
    uint64_t rp = ts_geom_cdiv(R, L->T);
    uint32_t tn = (uint32_t)ts_geom_cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * Lw;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * Lw;
    }
    /* Softmax stays on tiles 0..tn-1: spread by lwi_spread, a decoder's layers came to differ by a
     * cycle, so --layers-simulated no longer scaled them exactly */
    const uint32_t b = 0;
    if ((rc = lwi_gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    uint64_t out = lwi_alloc(L, rp * Lw * 4);
    for (uint32_t i = 0; i < tn; i++) {
        uint32_t t = b + i;
        uint64_t rows = (sc->hi[i] - sc->lo[i]) / Lw;
        uint32_t rw = (uint32_t)ts_geom_cdiv(rows, L->workers);
        size_t entry = LWT(t).wrk.n;
        lwi_emit_start_row(L, t, (uint32_t)rows, rw);
        W(t, MULI, RM(1), RM(1), (int32_t)(Lw * 4));
        W(t, SETZI, RM(2), (int32_t)sc->where[i], 0);
        W(t, ADD, RM(2), RM(2), RM(1));
        W(t, SETZI, RM(3), (int32_t)out, 0);
        W(t, ADD, RM(3), RM(3), RM(1));
        W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
        W(t, SETZI, RM(10), (int32_t)Lw - 1, 0);
        W(t, SETZI, RM(11), (int32_t)Lw, 0);
        size_t row = W(t, MOV, RM(4), RM(2), 0);
        W(t, LD32STEP, RA(0), RM(4), 4);
        W(t, RPT, RM(10), 2, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32MAX, RA(0), RA(0), RA(1));
        W(t, MOV, RM(4), RM(2), 0);
        W(t, MOV, RM(5), RM(3), 0);
        W(t, SETZI, RA(2), 0, 0);
        W(t, RPT, RM(11), (int32_t)(exp_len() + 4), 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32SUB, RA(1), RA(1), RA(0));
        emit_exp(L, t);
        W(t, F32ADD, RA(2), RA(2), RA(3));
        W(t, ST32STEP, RA(3), RM(5), 4);
        /* r = 1/sum: bit-trick seed, four Newton steps r = r (2 - s r) */
        W(t, MOV, RM(8), RA(2), 0);
        W(t, SETZI, RM(9), 0x7EF311C3, 0);
        W(t, SUB, RM(9), RM(9), RM(8));
        W(t, MOV, RA(4), RM(9), 0);
        W(t, LDCONST, RA(9), lwi_fbits(2.0f), 0);
        for (int k = 0; k < 4; k++) {
            W(t, F32MUL, RA(8), RA(2), RA(4));
            W(t, F32SUB, RA(8), RA(9), RA(8));
            W(t, F32MUL, RA(4), RA(4), RA(8));
        }
        W(t, MOV, RM(5), RM(3), 0);
        W(t, RPT, RM(11), 3, 0);
        W(t, LD32, RA(1), RM(5), 0);
        W(t, F32MUL, RA(1), RA(1), RA(4));
        W(t, ST32STEP, RA(1), RM(5), 4);
        W(t, ADDI, RM(2), RM(2), (int32_t)(Lw * 4));
        W(t, ADDI, RM(3), RM(3), (int32_t)(Lw * 4));
        W(t, BRNZDEC, RM(1), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
    lwi_use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .t0 = b, .chunk = rp * Lw, .addr = out, .es = 4};
    lwi_sync_all(L);
    return TS_OK;
}

/* ---- LayerNorm ---- */

/* $m1 := 4 w (this worker's slot), $m2 := 4 w cw (its block's byte offset in a row of Lw), $m10 :=
 * the block's length min(cw, max(0, Lw - w cw)): blocks of cw = ceil(Lw / workers) that do not
 * overlap (the sums of the blocks make the row's). */
static void emit_row_block(lw *L, uint32_t t, uint64_t Lw, uint32_t cw)
{
    W(t, GET, RM(1), TS_IPU_CSR_WORKER, 0);
    W(t, MULI, RM(2), RM(1), (int32_t)cw);
    W(t, SETZI, RM(3), (int32_t)Lw, 0);
    W(t, SUB, RM(3), RM(3), RM(2));
    W(t, SETZI, RM(4), (int32_t)cw, 0);
    W(t, CMPSLT, RM(5), RM(3), RM(4));
    W(t, SUB, RM(6), RM(3), RM(4));
    W(t, MUL, RM(6), RM(6), RM(5));
    W(t, ADD, RM(10), RM(4), RM(6));
    W(t, SETZI, RM(7), 0, 0);
    W(t, CMPSLT, RM(5), RM(10), RM(7));
    W(t, MUL, RM(6), RM(10), RM(5));
    W(t, SUB, RM(10), RM(10), RM(6));
    W(t, SHLI, RM(2), RM(2), 2);
    W(t, SHLI, RM(1), RM(1), 2);
}

/* LayerNorm of `rows` rows of Lw at `in` on tile t, each row split over the workers in three runs:
 * the blocks' sums (to part[row][0][w]); the mean and the blocks' sums of (x - mean)^2 (to
 * part[row][1][w]); the mean, 1/sqrt(variance + eps) and the block normalised, scaled, shifted. */
static void emit_layernorm_split(lw *L, uint32_t t, uint64_t rows, uint64_t Lw, uint64_t in, uint64_t part,
                                 uint64_t gaddr, uint64_t baddr, uint64_t out, float eps, bool rms)
{
    uint32_t W_ = L->workers, cw = (uint32_t)ts_geom_cdiv(Lw, W_);
    int32_t prow = (int32_t)(2 * W_ * 4);
    for (int run = 0; run < 3; run++) {
        size_t entry = LWT(t).wrk.n;
        emit_row_block(L, t, Lw, cw);
        W(t, SETZI, RM(8), (int32_t)in, 0);
        W(t, ADD, RM(8), RM(8), RM(2));          /* the block in row 0 */
        W(t, SETZI, RM(12), (int32_t)part, 0);   /* part of row 0 */
        W(t, ADD, RM(9), RM(12), RM(1));         /* this worker's slot */
        W(t, SETZI, RM(14), (int32_t)out, 0);
        W(t, ADD, RM(14), RM(14), RM(2));
        W(t, SETZI, RM(11), (int32_t)rows - 1, 0);
        W(t, SETZI, RM(13), (int32_t)W_, 0);
        W(t, LDCONST, RA(5), lwi_fbits((float)(1.0 / (double)Lw)), 0);
        size_t row = W(t, MOV, RM(4), RM(8), 0);
        if (run == 0) {
            W(t, SETZI, RA(0), 0, 0);
            if (!rms) { /* RMSNorm: the blocks' sums stay 0, so the mean is 0 */
                W(t, RPT, RM(10), 2, 0);
                W(t, LD32STEP, RA(1), RM(4), 4);
                W(t, F32ADD, RA(0), RA(0), RA(1));
            }
            W(t, ST32, RA(0), RM(9), 0);
        } else {
            W(t, MOV, RM(4), RM(12), 0);             /* the mean from the blocks' sums */
            W(t, SETZI, RA(0), 0, 0);
            W(t, RPT, RM(13), 2, 0);
            W(t, LD32STEP, RA(1), RM(4), 4);
            W(t, F32ADD, RA(0), RA(0), RA(1));
            W(t, F32MUL, RA(0), RA(0), RA(5));
            W(t, SETZI, RA(2), 0, 0);
            if (run == 1) {
                W(t, MOV, RM(4), RM(8), 0);
                W(t, RPT, RM(10), 3, 0);
                W(t, LD32STEP, RA(1), RM(4), 4);
                W(t, F32SUB, RA(1), RA(1), RA(0));
                W(t, F32MAC, RA(2), RA(1), RA(1));
                W(t, ST32, RA(2), RM(9), (int32_t)(W_ * 4));
            } else {
                W(t, RPT, RM(13), 2, 0);             /* $m4 is at the row's second half */
                W(t, LD32STEP, RA(1), RM(4), 4);
                W(t, F32ADD, RA(2), RA(2), RA(1));
                emit_variance(L, t, eps);
                emit_rsqrt(L, t, RM(3), RM(5));
                W(t, MOV, RM(4), RM(8), 0);
                W(t, MOV, RM(5), RM(14), 0);
                W(t, SETZI, RM(6), (int32_t)gaddr, 0);
                W(t, ADD, RM(6), RM(6), RM(2));
                W(t, SETZI, RM(7), (int32_t)baddr, 0);
                W(t, ADD, RM(7), RM(7), RM(2));
                emit_normalise(L, t, RM(10));
            }
        }
        W(t, ADDI, RM(8), RM(8), (int32_t)(Lw * 4));
        W(t, ADDI, RM(14), RM(14), (int32_t)(Lw * 4));
        W(t, ADDI, RM(9), RM(9), prow);
        W(t, ADDI, RM(12), RM(12), prow);
        W(t, BRNZDEC, RM(11), (int32_t)row, 0);
        W(t, EXIT, 0, 0, 0);
        lwi_run_all(L, t, entry);
    }
}

/* LayerNorm of `rows` rows of Lw at `in` on tile t, rows over the workers: per row the mean, the
 * variance, r = 1/sqrt(variance + eps), then (x - mean) * r * scale + bias. */
static void emit_layernorm_rows(lw *L, uint32_t t, uint64_t rows, uint64_t Lw, uint64_t in, uint64_t gaddr,
                                uint64_t baddr, uint64_t out, float eps, bool rms)
{
    uint32_t rw = (uint32_t)ts_geom_cdiv(rows, L->workers);
    size_t entry = LWT(t).wrk.n;
    lwi_emit_start_row(L, t, (uint32_t)rows, rw);
    W(t, MULI, RM(1), RM(1), (int32_t)(Lw * 4));
    W(t, SETZI, RM(2), (int32_t)in, 0);
    W(t, ADD, RM(2), RM(2), RM(1));
    W(t, SETZI, RM(3), (int32_t)out, 0);
    W(t, ADD, RM(3), RM(3), RM(1));
    W(t, SETZI, RM(1), (int32_t)rw - 1, 0);
    W(t, SETZI, RM(11), (int32_t)Lw, 0);
    W(t, LDCONST, RA(5), lwi_fbits((float)(1.0 / (double)Lw)), 0);
    size_t row = W(t, MOV, RM(4), RM(2), 0);
    W(t, SETZI, RA(0), 0, 0);
    if (!rms) { /* RMSNorm: a mean of 0 */
        W(t, RPT, RM(11), 2, 0);
        W(t, LD32STEP, RA(1), RM(4), 4);
        W(t, F32ADD, RA(0), RA(0), RA(1));
        W(t, F32MUL, RA(0), RA(0), RA(5));   /* mean */
    }
    W(t, MOV, RM(4), RM(2), 0);
    W(t, SETZI, RA(2), 0, 0);
    W(t, RPT, RM(11), 3, 0);
    W(t, LD32STEP, RA(1), RM(4), 4);
    W(t, F32SUB, RA(1), RA(1), RA(0));
    W(t, F32MAC, RA(2), RA(1), RA(1));
    emit_variance(L, t, eps); /* v = variance + epsilon */
    emit_rsqrt(L, t, RM(8), RM(9)); /* r = 1/sqrt(v) */
    W(t, MOV, RM(4), RM(2), 0);
    W(t, MOV, RM(5), RM(3), 0);
    W(t, SETZI, RM(6), (int32_t)gaddr, 0);
    W(t, SETZI, RM(7), (int32_t)baddr, 0);
    emit_normalise(L, t, RM(11));
    W(t, ADDI, RM(2), RM(2), (int32_t)(Lw * 4));
    W(t, ADDI, RM(3), RM(3), (int32_t)(Lw * 4));
    W(t, BRNZDEC, RM(1), (int32_t)row, 0);
    W(t, EXIT, 0, 0, 0);
    lwi_run_all(L, t, entry);
}

/* LayerNormalization over the last axis: rows partitioned over tiles as for Softmax; per row the
 * mean, the variance, 1/sqrt(variance + epsilon) by Newton's iteration from a bit-trick seed, then
 * (x - mean) * r * scale + bias, scale and bias initial data on every tile (1 and 0 when absent).
 * RMSNormalization is the same with a mean of 0 and no bias. */
ts_status lwi_lower_layernorm(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    bool rms = n->op == TS_OP_RMSNORM; /* x / sqrt(mean(x^2) + eps) * scale: the kernels with a mean of 0 */
    int64_t axis = ts_graph_norm_axis(n->attrs.axis, X->rank);
    if (axis != X->rank - 1)
        return lwi_unsupported(L, n, "normalising over more than the last axis");
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    uint64_t Lw = (uint64_t)X->dims[X->rank - 1], R = (uint64_t)ts_graph_tensor_elems(X) / Lw;
    for (size_t i = 1; i < n->nin; i++) {
        const ts_graph_tensor *P = ts_graph_get_tensor(L->g, n->in[i]);
        if (P->kind == TS_TENSOR_ACTIVATION || P->kind == TS_TENSOR_INPUT || ts_graph_tensor_elems(P) != (int64_t)Lw)
            return lwi_unsupported(L, n, "a scale or bias that is not a weight of one value per element of a row");
    }
    uint64_t rp = ts_geom_cdiv(R, L->T);
    /* where the weights stack high (lwi_place_op) a LayerNorm of more than an eighth of the chip's
     * rows takes a quarter of the tiles at most, so that its scale and bias, on each of its tiles,
     * can lie where the others' weights are fewest: ViT-B/16's 25, on 788 tiles each from tile 0,
     * held 150 KiB of the fullest tiles at batch 4. Not keyed: a layer's ln_1 and ln_2 have one key */
    bool few = L->wload && ts_geom_cdiv(R, rp) * 8 > L->T;
    if (few && L->T >= 4)
        rp = ts_geom_cdiv(R, L->T / 4);
    uint32_t tn = (uint32_t)ts_geom_cdiv(R, rp);
    for (uint32_t t = 0; t < tn; t++) {
        sc->lo[t] = t * rp * Lw;
        sc->hi[t] = ((t + 1) * rp < R ? (t + 1) * rp : R) * Lw;
    }
    uint32_t b = few ? lwi_place_op(L, tn, false) : lwi_spread(L, tn);
    L->toff = 0; /* its code names its tiles b + t */
    if ((rc = lwi_gather(L, n->in[0], tn, sc->lo, sc->hi, NULL, 0, 0, false, sc->where)) != TS_OK)
        return rc;
    uint64_t gaddr = lwi_salloc(L, Lw * 4), baddr = lwi_salloc(L, Lw * 4);
    float *v = ts_calloc(2 * Lw, 4);
    if (!v)
        return ts_err_set(L->err, TS_ENOMEM, "out of memory for the weights of '%s'", n->name);
    for (uint64_t i = 0; i < Lw; i++) {
        v[i] = n->nin > 1 ? ts_fill_value_f32(ts_graph_get_tensor(L->g, n->in[1]), n->in[1], i) : 1.0f;
        v[Lw + i] = n->nin > 2 ? ts_fill_value_f32(ts_graph_get_tensor(L->g, n->in[2]), n->in[2], i) : 0.0f;
    }
    for (uint32_t t = 0; t < tn && rc == TS_OK; t++) {
        rc = lwi_seg(L, b + t, gaddr, v, Lw * 4);
        if (rc == TS_OK)
            rc = lwi_seg(L, b + t, baddr, v + Lw, Lw * 4);
    }
    ts_free(v);
    if (rc != TS_OK)
        return rc;
    uint64_t out = lwi_alloc(L, rp * Lw * 4);
    if (rp < L->workers) { /* fewer rows than workers: each row split over the workers */
        uint64_t part = lwi_talloc(L, rp * 2 * L->workers * 4);
        for (uint32_t t = 0; t < tn; t++)
            emit_layernorm_split(L, b + t, (sc->hi[t] - sc->lo[t]) / Lw, Lw, sc->where[t], part, gaddr, baddr, out,
                                 (float)n->attrs.epsilon, rms);
    }
    for (uint32_t t = 0; t < tn && rp >= L->workers; t++)
        emit_layernorm_rows(L, b + t, (sc->hi[t] - sc->lo[t]) / Lw, Lw, sc->where[t], gaddr, baddr, out,
                            (float)n->attrs.epsilon, rms);
    lwi_use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .t0 = b, .chunk = rp * Lw, .addr = out, .es = 4};
    lwi_sync_all(L);
    return TS_OK;
}

/* ---- Transpose ---- */

/* Transpose: a data movement. The output's rows (its last axis) are partitioned over tiles,
 * ceil(rows / tiles) each; row slot j of every tile is gathered in one call: the row's elements
 * are one range of the input when the last output axis is the input's last, else one range of
 * one element per output element, strided. The copies go over the exchange when they cross
 * tiles. */
ts_status lwi_lower_transpose(lw *L, const ts_graph_node *n, lw_scr *sc)
{
    const ts_graph_tensor *X = ts_graph_get_tensor(L->g, n->in[0]);
    const ts_graph_tensor *Y = ts_graph_get_tensor(L->g, n->out[0]);
    ts_status rc = lwi_need_placed(L, n, n->in[0]);
    if (rc != TS_OK)
        return rc;
    if (L->pl[n->in[0]].es != 4)
        return lwi_unsupported(L, n, "an input held as f16 halves");
    int r = X->rank;
    int64_t perm[TS_GRAPH_MAX_RANK];
    uint64_t istr[TS_GRAPH_MAX_RANK];
    for (int a = 0; a < r; a++)
        perm[a] = n->attrs.nperm ? n->attrs.perm[a] : r - 1 - a;
    for (int a = r - 1; a >= 0; a--)
        istr[a] = a == r - 1 ? 1 : istr[a + 1] * (uint64_t)X->dims[a + 1];
    uint64_t Lo = r ? (uint64_t)Y->dims[r - 1] : 1, R = (uint64_t)ts_graph_tensor_elems(Y) / (Lo ? Lo : 1);
    uint64_t st1 = r ? istr[perm[r - 1]] : 1;
    uint64_t rpt = ts_geom_cdiv(R, L->T);
    uint32_t tn = (uint32_t)ts_geom_cdiv(R, rpt);
    const lw_place *P = &L->pl[n->in[0]];
    uint64_t av[2];
    lwi_elem_span(L, P->addr, P->chunk * 4, av);
    uint64_t out = lwi_alloc_avoid(L, rpt * Lo * 4, av[0], av[1]);
    for (uint64_t j = 0; j < rpt && rc == TS_OK; j++) {
        for (uint32_t t = 0; t < tn; t++) {
            uint64_t row = t * rpt + j, base = 0, rest = row;
            sc->lo[t] = sc->hi[t] = 0;
            sc->nr[t] = 0;
            if (row >= R)
                continue;
            for (int a = r - 2; a >= 0; a--) {
                base += rest % (uint64_t)Y->dims[a] * istr[perm[a]];
                rest /= (uint64_t)Y->dims[a];
            }
            sc->lo[t] = base;
            sc->hi[t] = base + (st1 == 1 ? Lo : 1);
            sc->nr[t] = st1 == 1 ? 1 : (uint32_t)Lo;
        }
        bool co = L->coalesce;
        L->into = out + j * Lo * 4;
        L->coalesce = true;
        rc = lwi_gather(L, n->in[0], tn, sc->lo, sc->hi, sc->nr, st1, 1, true, sc->where);
        L->into = 0;
        L->coalesce = co;
        lwi_sync_all(L); /* the pieces each tile held itself are copied in this superstep (before the next
                      * call's receivers arm) */
    }
    if (rc != TS_OK)
        return rc;
    lwi_use_tiles(L, tn);
    L->pl[n->out[0]] = (lw_place){.ntiles = tn, .chunk = rpt * Lo, .addr = out, .es = 4};
    return TS_OK;
}
