/* core/units.h — quantities written the way an architect writes them.
 *
 * "1.6 GHz", "256 KiB", "6.3 GB/s", "0.9 pJ", "165 ns", "16 B/cycle", or a plain number in the
 * base unit. Values are returned in base units: Hz, bytes, bytes/s, joules, seconds, watts,
 * bytes/cycle, cycles, metres.
 */
#ifndef TS_CORE_UNITS_H
#define TS_CORE_UNITS_H

#include <stddef.h>

typedef enum ts_unit_kind {
    TS_UNIT_NONE = 0,  /* dimensionless: a count, a ratio */
    TS_UNIT_FREQ,      /* Hz, kHz, MHz, GHz */
    TS_UNIT_BYTES,     /* B, KB, MB, GB, TB (10^3) and KiB, MiB, GiB, TiB (2^10); also bit, Kibit... */
    TS_UNIT_BANDWIDTH, /* B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, TiB/s, Gbit/s */
    TS_UNIT_BPC,       /* bytes per cycle: B/cycle */
    TS_UNIT_ENERGY,    /* fJ, pJ, nJ, uJ (µJ), mJ, J */
    TS_UNIT_TIME,      /* ps, ns, us (µs), ms, s */
    TS_UNIT_POWER,     /* uW, mW, W, kW */
    TS_UNIT_CYCLES,    /* cycles (the suffix "cycles" or "cycle" is optional) */
    TS_UNIT_LENGTH,    /* um (µm), mm, cm, m */
    TS_UNIT_KIND_COUNT
} ts_unit_kind;

/* Parse text as a quantity of the given kind. On failure returns -1 and writes a reason such
 * as "expected a frequency like '1.6 GHz', got 'fast'" into why. */
int ts_unit_parse(const char *text, ts_unit_kind kind, double *out, char *why, size_t why_len);

/* The base unit's symbol ("Hz", "B", "B/s", "J", "s", "W", "B/cycle", "cycles", "m", ""). */
const char *ts_unit_symbol(ts_unit_kind kind);
/* A noun for messages and schema docs ("frequency", "size", "bandwidth", ...). */
const char *ts_unit_noun(ts_unit_kind kind);
/* Format v (base units) with an SI or binary prefix for people: "1.6 GHz", "256 KiB". */
void ts_unit_format(double v, ts_unit_kind kind, char *buf, size_t n);

#endif
