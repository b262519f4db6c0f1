/* core/loopmark.h — proof that a unit loops forever without doing anything: the same state comes
 * back at a backward branch with no effect in between.
 *
 * A unit (an IPU context, a wafer PE's core) whose next state depends only on its registers, its
 * pc and state it cannot change alone (its memory, its accumulators, the fabric) is in an endless
 * loop when, at a taken backward branch, pc and registers equal those of an earlier backward
 * branch, the family has counted no effect since (no store, no send or receive, nothing written
 * that the unit reads or another unit sees), and nothing else can have one from now on. The future
 * from there is the past again, forever.
 *
 * The family calls ts_loop_step at every taken backward branch. The comparison follows Brent's
 * cycle finding: the mark moves to the current state after 1, 2, 4, ... backward branches (at
 * most TS_LOOP_MAXPOWER), so a loop of any length up to that many branches (nested loops, several
 * back edges) is found within about twice its period once it has entered it, at one comparison
 * per backward branch; the comparison looks at one register first (the branch's own, which a
 * counted loop changes every pass). The effect count is asked for only when a mark is taken and
 * when the state matches (the family may compute it then rather than count every instruction).
 * Sound, not complete: a loop that changes a register forever (a counter that never meets its
 * bound), writes memory on every pass or has a period of more than TS_LOOP_MAXPOWER backward
 * branches is not caught here; the run's cycle limit ends those.
 */
#ifndef TS_LOOPMARK_H
#define TS_LOOPMARK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define TS_LOOP_MAXREGS 32
#define TS_LOOP_MAXPOWER (UINT32_C(1) << 16)

/* All zero is the state with no mark. */
typedef struct ts_loopmark {
    uint32_t pc1;        /* backward branch of the mark + 1, 0 when there is none */
    uint32_t lam, power; /* branches since the mark; the mark moves when lam reaches power */
    uint64_t eff;        /* the unit's effect count when the mark was taken */
    uint64_t at;         /* cycle of the mark */
    uint32_t r[TS_LOOP_MAXREGS];
} ts_loopmark;

enum {
    TS_LOOP_PASS,  /* nothing to do */
    TS_LOOP_MATCH, /* pc and registers are the mark's: compare the effect count with l->eff */
    TS_LOOP_MARK   /* take a new mark here (ts_loop_mark) */
};

/* At a taken backward branch at pc with nregs registers r; hint is the register to compare first. */
static inline int ts_loop_step(ts_loopmark *l, uint32_t pc, const uint32_t *r, uint32_t nregs, uint32_t hint)
{
    if (l->pc1 == pc + 1 && l->r[hint] == r[hint] && !memcmp(l->r, r, nregs * sizeof *r))
        return TS_LOOP_MATCH;
    if (l->pc1 == 0 || ++l->lam >= l->power)
        return TS_LOOP_MARK;
    return TS_LOOP_PASS;
}

/* Mark this state, with the unit's effect count eff, at cycle now. */
static inline void ts_loop_mark(ts_loopmark *l, uint32_t pc, const uint32_t *r, uint32_t nregs, uint64_t eff,
                                uint64_t now)
{
    l->pc1 = pc + 1;
    memcpy(l->r, r, nregs * sizeof *r);
    l->eff = eff;
    l->at = now;
    l->lam = 0;
    l->power = l->power == 0 ? 1 : l->power < TS_LOOP_MAXPOWER ? 2 * l->power : l->power;
}

/* After a match with another effect count: the state is the mark's; keep it, from now, with the
 * count eff. */
static inline void ts_loop_refresh(ts_loopmark *l, uint64_t eff, uint64_t now)
{
    l->eff = eff;
    l->at = now;
    l->lam = 0;
}

/* What every unit does when ts_loop_step said k (not TS_LOOP_PASS), with its effect count eff
 * now: take the mark, or, at a match, keep the mark from now when the count moved. True when the
 * state came back with no effect since: the unit loops forever (l->at is the mark's cycle). */
static inline bool ts_loop_settle(ts_loopmark *l, int k, uint32_t pc, const uint32_t *r, uint32_t nregs, uint64_t eff,
                                  uint64_t now)
{
    if (k == TS_LOOP_MARK) {
        ts_loop_mark(l, pc, r, nregs, eff, now);
        return false;
    }
    if (eff != l->eff) {
        ts_loop_refresh(l, eff, now);
        return false;
    }
    return true;
}

#endif
