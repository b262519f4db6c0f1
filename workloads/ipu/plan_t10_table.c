/* workloads/ipu/plan_t10_table.c — print the planners' comparison table of docs/lowering-ipu.md
 * ("Planner (b)"): for each MatMul, Conv (as its im2col MatMul) and the MatMuls of a BERT-base
 * layer, the load-compute-store plan and the chosen compute-shift plan as the cost model of
 * workloads/ipu/plan_t10.h prices them on ipu_mk1. Usage: plan_t10_table [budget_KiB]. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "workloads/ipu/plan_t10.h"

/* configs/ipu_mk1.yaml: tiles 1216, tile.sram 256 KiB, amp.macs_per_cycle_f32 8 (4 outputs a pass),
 * tile.worker_contexts 6, exchange.bytes_per_cycle 4, sync.internal_cycles 90. round_cycles 30 is
 * assumed (arming recv, send and rxwait of one exchange superstep). */
static const ts_t10_hw mk1 = {.tiles = 1216, .sram_bytes = 256 * 1024, .units = 4, .workers = 6, .xbytes = 4,
                              .sync_cycles = 90, .round_cycles = 30};

static double share(uint64_t part, uint64_t all) { return all ? 100.0 * (double)part / (double)all : 0.0; }

/* The fastest plan of v[0..n) in which nothing rotates (0 if none). */
static uint64_t best_still(const ts_t10_plan *v, size_t n)
{
    uint64_t b = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].rot == TS_T10_ROT_NONE && (!b || v[i].cycles < b))
            b = v[i].cycles;
    return b;
}

static void row(const char *name, const ts_t10_plan *l, const ts_t10_plan *t, uint64_t still)
{
    static const char *rot[] = {"-", "A", "B", "AB"};
    printf("| %s | %llu | %.1f %% | %llu | %u×%u×%u, ft %u, rp %u, rotates %s | %llu | %.1f / %.1f / %.1f %% | %llu | %.2f× | %llu |\n",
           name, (unsigned long long)l->cycles, share(l->exchange_cycles, l->cycles),
           (unsigned long long)(l->mem_bytes / 1024), t->fm, t->fn, t->fk, t->ft, t->rp, rot[t->rot],
           (unsigned long long)t->cycles, share(t->compute_cycles, t->cycles), share(t->exchange_cycles, t->cycles),
           share(t->sync_cycles, t->cycles), (unsigned long long)(t->mem_bytes / 1024),
           (double)l->cycles / (double)t->cycles, (unsigned long long)still);
}

/* The Pareto set of mm (owned by the caller), or NULL after printing why. */
static ts_t10_plan *pareto(const ts_t10_hw *hw, const ts_t10_mm *mm, size_t *n, bool weights, uint64_t *still)
{
    ts_t10_plan *v;
    ts_err err;
    ts_err_init(&err);
    if (ts_t10_mm_plans(hw, mm, &v, n, &err) != TS_OK) {
        fprintf(stderr, "plan_t10_table: %s\n", err.msg);
        ts_err_free(&err);
        return NULL;
    }
    ts_err_free(&err);
    *still = best_still(v, *n);
    *n = weights ? ts_t10_pareto_weights(v, *n) : ts_t10_pareto(v, *n);
    return v;
}

int main(int argc, char **argv)
{
    ts_t10_hw hw = mk1;
    if (argc > 1)
        hw.sram_bytes = strtoull(argv[1], NULL, 10) * 1024;
    struct { const char *name; ts_t10_mm mm; } ops[] = {
        {"matmul 1216×128×128", {1216, 128, 128, 4, false}},
        {"matmul 256×256×256", {256, 256, 256, 4, false}},
        {"matmul 512×768×768", {512, 768, 768, 4, false}},
        {"conv 64→64 3×3 56×56 (im2col)", ts_t10_conv_as_mm(64, 56, 56, 64, 3, 3, 4)},
        {"conv 256→256 3×3 14×14 (im2col)", ts_t10_conv_as_mm(256, 14, 14, 256, 3, 3, 4)},
    };
    printf("| operator | LCS cycles | LCS exchange | LCS KiB/tile | T10 plan (fm×fn×fk) | T10 cycles | "
           "compute / exchange / sync | T10 KiB/tile | speed-up | T10, nothing rotating |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        size_t n;
        uint64_t still;
        ts_t10_plan *v = pareto(&hw, &ops[i].mm, &n, false, &still), l;
        if (!v)
            return 1;
        ts_t10_mm_lcs(&hw, &ops[i].mm, &l);
        row(ops[i].name, &l, &v[n - 1], still);
        ts_free(v);
    }
    /* BERT-base layer, seq 128: its six weight MatMuls, weights resident together */
    struct { const char *name; ts_t10_mm mm; } bert[] = {
        {"bert q", {128, 768, 768, 4, false}},      {"bert k", {128, 768, 768, 4, false}},
        {"bert v", {128, 768, 768, 4, false}},      {"bert out", {128, 768, 768, 4, false}},
        {"bert ffn1", {128, 768, 3072, 4, false}},  {"bert ffn2", {128, 3072, 768, 4, false}},
    };
    enum { NB = sizeof bert / sizeof *bert };
    ts_t10_plan *sets[NB];
    size_t ns[NB], pick[NB];
    uint64_t stills[NB];
    for (size_t i = 0; i < NB; i++)
        if (!(sets[i] = pareto(&hw, &bert[i].mm, &ns[i], true, &stills[i])))
            return 1;
    uint64_t total;
    ts_err err;
    ts_err_init(&err);
    if (ts_t10_reconcile((const ts_t10_plan *const *)sets, ns, NB, hw.sram_bytes, pick, &total, &err) != TS_OK) {
        fprintf(stderr, "plan_t10_table: BERT layer: %s\n", err.msg);
        return 1;
    }
    ts_t10_plan lsum = {0}, tsum = {0};
    for (size_t i = 0; i < NB; i++) {
        ts_t10_plan l;
        ts_t10_mm_lcs(&hw, &bert[i].mm, &l);
        row(bert[i].name, &l, &sets[i][pick[i]], stills[i]);
        lsum.cycles += l.cycles, lsum.exchange_cycles += l.exchange_cycles;
        lsum.mem_bytes = l.mem_bytes > lsum.mem_bytes ? l.mem_bytes : lsum.mem_bytes;
        const ts_t10_plan *t = &sets[i][pick[i]];
        tsum.cycles += t->cycles, tsum.compute_cycles += t->compute_cycles;
        tsum.exchange_cycles += t->exchange_cycles, tsum.sync_cycles += t->sync_cycles;
        ts_free(sets[i]);
    }
    tsum.mem_bytes = total;
    tsum.ft = tsum.rp = 0;
    printf("| **BERT layer, 6 MatMuls** | %llu | %.1f %% | %llu (largest) | reconciled, all weights resident | %llu | "
           "%.1f / %.1f / %.1f %% | %llu (all) | %.2f× | |\n",
           (unsigned long long)lsum.cycles, share(lsum.exchange_cycles, lsum.cycles),
           (unsigned long long)(lsum.mem_bytes / 1024), (unsigned long long)tsum.cycles,
           share(tsum.compute_cycles, tsum.cycles), share(tsum.exchange_cycles, tsum.cycles),
           share(tsum.sync_cycles, tsum.cycles), (unsigned long long)(total / 1024),
           (double)lsum.cycles / (double)tsum.cycles);
    ts_err_free(&err);
    return 0;
}
