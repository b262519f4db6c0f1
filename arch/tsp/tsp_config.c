/* arch/tsp/tsp_config.c — the TSP config schema, its cross-key checks, and the floorplan and
 * queue layout derived from it. Figures are from research/groq_tsp.md (section and source tag on
 * each key); keys the research gives no figure for say "assumed" and why. */
#include "arch/tsp/tsp.h"
#include "arch/tsp/tsp_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include <string.h>

#define U(path, unit, lo, hi, def, desc, field) \
    {path, TS_CFG_UINT, unit, lo, hi, def, desc, offsetof(ts_tsp_cfg, field), NULL}

static const ts_cfg_key tsp_keys[] = {
    U("superlanes", TS_UNIT_NONE, 1, 64, "20",
      "tiles per slice; vector length = superlanes x lanes (ISCA20 §II, MPR20: 20; research §1.1)", superlanes),
    U("lanes", TS_UNIT_NONE, 1, 64, "16", "lanes per superlane, 1 byte per lane per stream (ISCA20 §I-B; research §1.1)",
      lanes),
    {"clock", TS_CFG_FLOAT, TS_UNIT_FREQ, 1e6, 1e10, "900 MHz", "core clock (ISCA20 abstract, BRIEF, GF; research §1.1)",
     offsetof(ts_tsp_cfg, clock_hz), NULL},
    {"floorplan", TS_CFG_STRLIST, TS_UNIT_NONE, 1, 0,
     "[mxm*2, sxm, mem*44, vxm, mem*44, sxm, mxm*2]",
     "slices west to east: mem, vxm (exactly one), mxm (one plane each), sxm; 'kind*n' repeats "
     "(MPR20 via TS20: MXM | SXM | MEM | VXM | MEM | SXM | MXM; research §1.2)",
     offsetof(ts_tsp_cfg, floorplan), NULL},
    U("streams.per_direction", TS_UNIT_NONE, 1, TSP_MAX_STREAMS, "32",
      "streams per direction, 1 byte per lane each (ISCA20 §I-B, Fig. 4; research §1.1)", streams),
    {"streams.sr_map", TS_CFG_INTLIST, TS_UNIT_NONE, 0, TSP_MAX_SLICES - 1, "[]",
     "stream-register position of each floorplan slice, non-decreasing; empty = one position per "
     "slice (assumed: the map is not public, research §1.2)", offsetof(ts_tsp_cfg, sr_map), NULL},
    {"streams.hop_length", TS_CFG_FLOAT, TS_UNIT_LENGTH, 1e-6, 1e-1, "0.27 mm",
     "wire length of one stream-register hop (assumed: 25 mm die width, ISCA20 abstract, over 94 positions)",
     offsetof(ts_tsp_cfg, hop_m), NULL},
    U("mem.slice_bytes", TS_UNIT_BYTES, 1024, 1ull << 32, "2.5 MiB",
      "SRAM per MEM slice (ISCA20 §II-B; research §1.4)", mem_slice_bytes),
    U("mem.banks", TS_UNIT_NONE, 1, 16, "2", "banks per slice, pseudo-dual-port (ISCA20 §III-B; research §1.4)",
      mem_banks),
    U("mxm.dim", TS_UNIT_NONE, 1, 4096, "320", "plane size, must equal the vector length (ISCA20 §III-D; research §1.5)",
      mxm_dim),
    U("mxm.queues", TS_UNIT_NONE, 1, 16, "3",
      "instruction queues per plane (inferred: 6 MXM queues per hemisphere / 2 planes, TS20; research §1.3)",
      mxm_queues),
    U("mxm.fp16_interval", TS_UNIT_CYCLES, 1, 64, "4",
      "cycles between FP16 activations on one plane (inferred: FP16 is about 1/4 of the INT8 MAC rate, "
      "BRIEF and MPR via summary; research §1.1)", mxm_fp16_interval),
    U("vxm.alus", TS_UNIT_NONE, 1, TSP_MAX_ALUS, "16",
      "ALUs per lane, one queue each (ISCA20 §III-C; TS20 16 VXM queues; research §1.3, §1.6)", vxm_alus),
    U("sxm.queues", TS_UNIT_NONE, 1, 64, "14", "instruction queues per SXM (TS20; research §1.3)", sxm_queues),
    U("sxm.max_transposes", TS_UNIT_NONE, 1, 16, "2", "transposes in flight per SXM (ISCA20 §III-E; research §1.7)",
      sxm_max_transposes),
    U("icu.queue_capacity", TS_UNIT_NONE, 1, 1 << 20, "128",
      "instructions a queue holds; the first ones are loaded before the run (assumed: not public)", icu_capacity),
    U("icu.ifetch_bytes", TS_UNIT_BYTES, 32, 1 << 16, "640",
      "instruction text brought by one ifetch (ISCA20 §III-A3; research §1.8)", icu_ifetch_bytes),
    U("icu.fetch_bytes_per_cycle", TS_UNIT_BYTES, 1, 1 << 16, "16",
      "instruction-fetch bandwidth per queue: 144 x 16 B/cycle (ISCA20 §II-B; research §1.1)", icu_fetch_bpc),
    U("icu.insn_bytes", TS_UNIT_BYTES, 1, 1024, "32",
      "bytes of one instruction in a queue (assumed: the program format's 32-byte instruction)", icu_insn_bytes),
    U("icu.sync_cycles", TS_UNIT_CYCLES, 1, 100000, "35",
      "cycles from notify to the release of every sync (ISCA20 §III-A2; research §1.8, §2.4)", icu_sync_cycles),
    U("c2c.links", TS_UNIT_NONE, 0, 64, "16", "chip-to-chip links (ISCA20 §II; research §1.1)", c2c_links),
    U("c2c.latency", TS_UNIT_CYCLES, 1, 1000000, "100",
      "cycles from send to arrival on the looped-back link (assumed: link latency not public, research §7.1)",
      c2c_latency),
    U("c2c.hac_period", TS_UNIT_CYCLES, 1, 1000000, "256",
      "alignment epoch a deskew waits for (one summary of ISCA22; research §4.3, unverified)", c2c_hac_period),
    U("d_skew.mem", TS_UNIT_CYCLES, 0, 1000, "0",
      "cycles from dispatch to operand read in MEM (assumed: d_skew values not public, research §2.1)", d_skew[TSP_U_MEM]),
    U("d_skew.vxm", TS_UNIT_CYCLES, 0, 1000, "0", "as d_skew.mem, for the VXM (assumed)", d_skew[TSP_U_VXM]),
    U("d_skew.mxm", TS_UNIT_CYCLES, 0, 1000, "0", "as d_skew.mem, for the MXM (assumed)", d_skew[TSP_U_MXM]),
    U("d_skew.sxm", TS_UNIT_CYCLES, 0, 1000, "0", "as d_skew.mem, for the SXM (assumed)", d_skew[TSP_U_SXM]),
    U("d_skew.c2c", TS_UNIT_CYCLES, 0, 1000, "0", "as d_skew.mem, for C2C (assumed)", d_skew[TSP_U_C2C]),
    U("d_skew.icu", TS_UNIT_CYCLES, 0, 1000, "0", "as d_skew.mem, for ifetch (assumed)", d_skew[TSP_U_ICU]),
#define TSP_OP(id, mn, ops, cls, unit, ev, fl, doc)
#define TSP_OPL(id, mn, ops, cls, unit, def, src, ev, fl, doc) \
    U("d_func." mn, TS_UNIT_CYCLES, 1, 100000, def, "functional delay of " mn " (" src ")", d_func[TSP_OP_##id]),
#include "arch/tsp/tsp_isa.def"
#undef TSP_OP
#undef TSP_OPL
};

static const char *const kind_names[TSP_S_COUNT] = {"mem", "vxm", "mxm", "sxm"};

ts_status ts_tsp_layout(const ts_tsp_cfg *c, tsp_layout *l, ts_err *err)
{
    memset(l, 0, sizeof *l);
    uint32_t n = 0, nvxm = 0;
    for (size_t i = 0; i < c->floorplan.n; i++) {
        const char *item = c->floorplan.v[i];
        char name[16];
        size_t k = 0;
        while (item[k] && item[k] != '*' && k < sizeof name - 1) {
            name[k] = (char)tolower((unsigned char)item[k]);
            k++;
        }
        name[k] = 0;
        long rep = 1;
        if (item[k] == '*') {
            char *end;
            rep = strtol(item + k + 1, &end, 10);
            if (*end || rep < 1)
                return ts_err_set(err, TS_EINPUT, "floorplan item '%s' has a bad repeat count", item);
        } else if (item[k]) {
            return ts_err_set(err, TS_EINPUT, "floorplan item '%s' is not 'kind' or 'kind*n'", item);
        }
        int kind = -1;
        for (int j = 0; j < TSP_S_COUNT; j++)
            if (!strcmp(name, kind_names[j]))
                kind = j;
        if (kind < 0)
            return ts_err_set(err, TS_EINPUT, "floorplan item '%s' is not mem, vxm, mxm or sxm", item);
        if (n + (uint64_t)rep > TSP_MAX_SLICES)
            return ts_err_set(err, TS_EINPUT, "floorplan has more than %d slices", TSP_MAX_SLICES);
        for (long r = 0; r < rep; r++)
            l->kind[n++] = (uint8_t)kind;
        if (kind == TSP_S_VXM)
            nvxm += (uint32_t)rep;
    }
    if (nvxm != 1)
        return ts_err_set(err, TS_EINPUT, "floorplan has %u vxm slices, needs exactly one", nvxm);
    l->nslices = n;
    for (uint32_t i = 0; i < n; i++)
        if (l->kind[i] == TSP_S_VXM)
            l->vxm = i;
    /* Stream-register positions. */
    if (c->sr_map.n) {
        if (c->sr_map.n != n)
            return ts_err_set(err, TS_EINPUT, "streams.sr_map has %zu entries, the floorplan %u slices", c->sr_map.n, n);
        for (uint32_t i = 0; i < n; i++) {
            if (c->sr_map.v[i] < 0 || (i && c->sr_map.v[i] < c->sr_map.v[i - 1]))
                return ts_err_set(err, TS_EINPUT, "streams.sr_map entry %u (%" PRId64 ") is negative or "
                                  "smaller than the one before", i, c->sr_map.v[i]);
            l->pos[i] = (uint16_t)c->sr_map.v[i];
        }
    } else {
        for (uint32_t i = 0; i < n; i++)
            l->pos[i] = (uint16_t)i;
    }
    l->npos = (uint32_t)l->pos[n - 1] + 1;
    /* Numbering: west slices counted from the VXM outward, then east ones. */
    uint32_t cnt[TSP_S_COUNT] = {0};
    for (int h = 0; h < 2; h++) {
        uint32_t before[TSP_S_COUNT];
        memcpy(before, cnt, sizeof before);
        for (uint32_t d = 1; d < n; d++) {
            int64_t i = h == 0 ? (int64_t)l->vxm - d : (int64_t)l->vxm + d;
            if (i < 0 || i >= n)
                break;
            int k = l->kind[i];
            l->hemi[i] = (int8_t)h;
            l->num[i] = (uint16_t)cnt[k];
            if (k == TSP_S_MEM)
                l->mem_slice[cnt[k]] = (uint16_t)i;
            else if (k == TSP_S_MXM)
                l->mxm_slice[cnt[k]] = (uint16_t)i;
            else if (k == TSP_S_SXM)
                l->sxm_slice[cnt[k]] = (uint16_t)i;
            cnt[k]++;
        }
        if (h == 0)
            l->mem_per_hemi[0] = cnt[TSP_S_MEM];
        else
            l->mem_per_hemi[1] = cnt[TSP_S_MEM] - before[TSP_S_MEM];
    }
    l->hemi[l->vxm] = -1;
    l->nmem = cnt[TSP_S_MEM];
    l->nmxm = cnt[TSP_S_MXM];
    l->nsxm = cnt[TSP_S_SXM];
    /* Queues: MEM, VXM ALUs, MXM planes, SXMs. */
    uint64_t nq = l->nmem + c->vxm_alus + l->nmxm * c->mxm_queues + l->nsxm * c->sxm_queues;
    if (nq > TSP_MAX_QUEUES)
        return ts_err_set(err, TS_EINPUT, "the config has %" PRIu64 " instruction queues, at most %d are supported",
                          nq, TSP_MAX_QUEUES);
    uint32_t q = 0;
    for (uint32_t i = 0; i < l->nmem; i++, q++)
        l->qslice[q] = l->mem_slice[i];
    l->q_vxm = q;
    for (uint32_t i = 0; i < c->vxm_alus; i++, q++) {
        l->qslice[q] = (uint16_t)l->vxm;
        l->qsub[q] = (uint8_t)i;
    }
    l->q_mxm = q;
    for (uint32_t i = 0; i < l->nmxm; i++)
        for (uint32_t j = 0; j < c->mxm_queues; j++, q++) {
            l->qslice[q] = l->mxm_slice[i];
            l->qsub[q] = (uint8_t)j;
        }
    l->q_sxm = q;
    for (uint32_t i = 0; i < l->nsxm; i++)
        for (uint32_t j = 0; j < c->sxm_queues; j++, q++) {
            l->qslice[q] = l->sxm_slice[i];
            l->qsub[q] = (uint8_t)j;
        }
    l->nqueues = q;
    return TS_OK;
}

void ts_tsp_slice_name(const tsp_layout *l, uint32_t s, char *buf, size_t n)
{
    static const char *const up[TSP_S_COUNT] = {"MEM", "VXM", "MXM", "SXM"};
    if (s >= l->nslices) {
        snprintf(buf, n, "slice %u", s);
        return;
    }
    if (l->kind[s] == TSP_S_VXM) {
        snprintf(buf, n, "VXM");
        return;
    }
    /* Within its hemisphere: MEM W0 is the MEM slice nearest the VXM (ISCA20 Fig. 4 numbering). */
    uint32_t k = l->num[s];
    if (l->hemi[s] == 1) {
        if (l->kind[s] == TSP_S_MEM)
            k -= l->mem_per_hemi[0];
        else
            for (uint32_t i = 0; i < s; i++)
                if (l->kind[i] == l->kind[s] && l->hemi[i] == 0)
                    k--;
    }
    snprintf(buf, n, "%s %c%u", up[l->kind[s]], l->hemi[s] ? 'E' : 'W', k);
}

static ts_status tsp_check(void *cfgp, ts_err *err)
{
    ts_tsp_cfg *c = cfgp;
    uint64_t vl = c->superlanes * c->lanes;
    if (c->mxm_dim != vl)
        return ts_err_set(err, TS_EINPUT, "mxm.dim is %" PRIu64 " but the vector length (superlanes x lanes) is %" PRIu64,
                          c->mxm_dim, vl);
    if (c->mem_slice_bytes % (vl * c->mem_banks))
        return ts_err_set(err, TS_EINPUT, "mem.slice_bytes (%" PRIu64 ") is not a whole number of %" PRIu64
                          "-byte vectors per bank", c->mem_slice_bytes, vl);
    if (c->icu_ifetch_bytes % c->icu_insn_bytes)
        return ts_err_set(err, TS_EINPUT, "icu.ifetch_bytes (%" PRIu64 ") is not a multiple of icu.insn_bytes (%" PRIu64 ")",
                          c->icu_ifetch_bytes, c->icu_insn_bytes);
    for (int op = 0; op < TSP_OP_COUNT; op++) {
        const tsp_opfacts *f = &ts_tsp_opfacts[op];
        if (!c->d_func[op])
            continue;
        uint64_t skew = c->d_skew[f->unit];
        uint64_t need = skew + ((f->flags & TSP_F_XSL) ? c->superlanes : 1);
        if (c->d_func[op] < need)
            return ts_err_set(err, TS_EINPUT, "d_func.%s is %" PRIu64 " cycles but must be at least %" PRIu64
                              " (d_skew %" PRIu64 "%s)", ts_tsp_isa.ops[op].mnemonic, c->d_func[op], need, skew,
                              (f->flags & TSP_F_XSL) ? " + superlanes: the output needs every superlane's input"
                                                     : " + 1");
    }
    tsp_layout *l = ts_malloc(sizeof *l); /* large: keep it off the stack */
    if (!l)
        return ts_err_set(err, TS_ENOMEM, "out of memory");
    ts_status rc = ts_tsp_layout(c, l, err);
    ts_free(l);
    return rc;
}

const ts_schema ts_tsp_schema = {
    .arch = "tsp",
    .title = "Groq-style Tensor Streaming Processor: superlanes, streams, MEM/VXM/MXM/SXM slices",
    .keys = tsp_keys,
    .nkeys = sizeof tsp_keys / sizeof tsp_keys[0],
    .size = sizeof(ts_tsp_cfg),
    .check = tsp_check,
};


/* ---- public helpers (tsp.h) ----------------------------------------------------------------- */

const ts_schema *ts_tsp_schema_lookup(const char *arch)
{
    return arch && !strcmp(arch, "tsp") ? &ts_tsp_schema : NULL;
}

/* Run f on the layout of cfg; -1 when the layout cannot be built. */
static int with_layout(const void *cfg, int (*f)(const ts_tsp_cfg *, const tsp_layout *, const int *), const int *args)
{
    tsp_layout *l = ts_malloc(sizeof *l);
    ts_err e;
    ts_err_init(&e);
    int r = -1;
    if (l && ts_tsp_layout(cfg, l, &e) == TS_OK)
        r = f(cfg, l, args);
    ts_err_free(&e);
    ts_free(l);
    return r;
}

static int mem_index(const ts_tsp_cfg *c, const tsp_layout *l, const int *a)
{
    (void)c;
    if (a[0] < 0 || a[0] > 1 || a[1] < 0 || (uint32_t)a[1] >= l->mem_per_hemi[a[0]])
        return -1;
    return (int)(a[0] ? l->mem_per_hemi[0] : 0) + a[1];
}

static int vxm_queue(const ts_tsp_cfg *c, const tsp_layout *l, const int *a)
{
    return a[0] >= 0 && (uint64_t)a[0] < c->vxm_alus ? (int)l->q_vxm + a[0] : -1;
}

/* Unit number (MXM plane or SXM) of the a[1]-th unit of kind a[3] in hemisphere a[0], or -1. */
static int unit_num(const tsp_layout *l, int hemi, int n, int kind)
{
    int seen = 0;
    for (uint32_t d = 1; d < l->nslices; d++) {
        int64_t i = hemi == 0 ? (int64_t)l->vxm - d : (int64_t)l->vxm + d;
        if (i < 0 || i >= l->nslices)
            break;
        if (l->kind[i] == kind && seen++ == n)
            return l->num[i];
    }
    return -1;
}

static int mxm_queue(const ts_tsp_cfg *c, const tsp_layout *l, const int *a)
{
    int p = unit_num(l, a[0], a[1], TSP_S_MXM);
    if (p < 0 || a[2] < 0 || (uint64_t)a[2] >= c->mxm_queues)
        return -1;
    return (int)l->q_mxm + p * (int)c->mxm_queues + a[2];
}

static int sxm_queue(const ts_tsp_cfg *c, const tsp_layout *l, const int *a)
{
    int s = unit_num(l, a[0], 0, TSP_S_SXM);
    if (s < 0 || a[1] < 0 || (uint64_t)a[1] >= c->sxm_queues)
        return -1;
    return (int)l->q_sxm + s * (int)c->sxm_queues + a[1];
}

static int queue_pos(const ts_tsp_cfg *c, const tsp_layout *l, const int *a)
{
    (void)c;
    return a[0] >= 0 && (uint32_t)a[0] < l->nqueues ? l->pos[l->qslice[a[0]]] : -1;
}

int ts_tsp_mem_index(const void *cfg, int hemi, int n) { return with_layout(cfg, mem_index, (int[]){hemi, n}); }
int ts_tsp_queue_mem(const void *cfg, int hemi, int n) { return ts_tsp_mem_index(cfg, hemi, n); }
int ts_tsp_queue_vxm(const void *cfg, int alu) { return with_layout(cfg, vxm_queue, (int[]){alu}); }
int ts_tsp_queue_mxm(const void *cfg, int hemi, int plane, int j)
{
    return with_layout(cfg, mxm_queue, (int[]){hemi, plane, j});
}
int ts_tsp_queue_sxm(const void *cfg, int hemi, int j) { return with_layout(cfg, sxm_queue, (int[]){hemi, j}); }
int ts_tsp_queue_position(const void *cfg, int queue) { return with_layout(cfg, queue_pos, (int[]){queue}); }

int ts_tsp_reg_east(int s) { return TSP_REG_EAST + s; }
int ts_tsp_reg_west(int s) { return TSP_REG_WEST + s; }
int ts_tsp_reg_alu(int alu) { return TSP_REG_ALU + alu; }
int ts_tsp_reg_nul(void) { return TSP_REG_NUL; }
int ts_tsp_reg_type(int t) { return TSP_REG_TYPE + t; }
int ts_tsp_op(const char *mnemonic) { return ts_isa_find(&ts_tsp_isa, mnemonic, strlen(mnemonic)); }
