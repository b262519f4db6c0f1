/* core/loopmark.h — proof that a unit loops forever without doing anything: the same state comes
 * back at a backward branch with no effect in between.
 *
 * A unit (an IPU context, a wafer PE's core) whose next state depends only on its registers, its
 * pc and state it cannot change alone (its memory, its accumulators, the fabric) is in an endless
 * loop when, at a taken backward branch, pc and registers equal those of an earlier backward
 * branch and the unit's family has counted no effect since: no store, no send or receive, nothing
 * written that the unit reads or another unit sees. The future from there is the past again,
 * forever. The family counts effects (a counter it raises on every instruction that writes beyond
 * the unit's own registers and on every word that lands in its memory) and calls ts_loop_seen at
 * every taken backward branch.
 *
 * The comparison follows Brent's cycle finding: the mark moves to the current state after 1, 2,
 * 4, ... backward branches, so a loop of any length (nested loops, several back edges) is found
 * within about twice its period once it has entered it, at one comparison per backward branch.
 * The comparison looks at one register first (the branch's own, which a counted loop changes
 * every pass), so a loop that makes progress costs a few compares; an effect only invalidates
 * the mark (no copy). Sound, not complete: a loop that changes a register forever (a counter
 * that never meets its bound) or writes memory on every pass is not caught here; the run's cycle
 * limit ends those.
 */
#ifndef TS_LOOPMARK_H
#define TS_LOOPMARK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define TS_LOOP_MAXREGS 32

/* All zero is the state with no mark. */
typedef struct ts_loopmark {
    uint32_t pc1;        /* backward branch of the mark + 1, 0 when there is none */
    uint32_t lam, power; /* branches since the mark; the mark moves when lam reaches power */
    uint64_t eff;        /* the unit's effect count when the mark was taken */
    uint64_t at;         /* cycle of the mark */
    uint32_t r[TS_LOOP_MAXREGS];
} ts_loopmark;

/* At a taken backward branch at pc, cycle now, with nregs registers r (hint: the index of the one
 * to compare first) and the unit's effect count eff: true when this state was seen before with no
 * effect since (l->at is then the cycle it was first seen). */
static inline bool ts_loop_seen(ts_loopmark *l, uint32_t pc, const uint32_t *r, uint32_t nregs, uint32_t hint,
                                uint64_t eff, uint64_t now)
{
    if (l->eff != eff) { /* an effect since the mark: start again, lazily */
        l->eff = eff;
        l->pc1 = 0;
        l->power = 0;
        return false;
    }
    if (l->pc1 == pc + 1 && l->r[hint] == r[hint] && !memcmp(l->r, r, nregs * sizeof *r))
        return true;
    if (l->pc1 == 0 || ++l->lam >= l->power) {
        l->pc1 = pc + 1;
        l->at = now;
        memcpy(l->r, r, nregs * sizeof *r);
        l->lam = 0;
        l->power = l->power == 0 ? 1 : l->power < (UINT32_C(1) << 30) ? 2 * l->power : l->power;
    }
    return false;
}

#endif
