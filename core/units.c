/* core/units.c — quantities written the way an architect writes them (see units.h).
 *
 * A quantity is a number (decimal, optional sign, fraction and exponent: "1.6", "1e9", "-3")
 * followed by an optional unit, with or without a space between. The unit is looked up in the
 * table of the expected kind; a unit of another kind is reported as such ("3 ns" where a
 * frequency is expected). "µ" (U+00B5 or U+03BC) and "u" both mean micro. Ranges are not checked
 * here: that is the schema's job.
 */
#include "core/units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One accepted suffix and the factor that takes it to the base unit. */
typedef struct unit_sym {
    const char *sym;
    double mul;
} unit_sym;

/* Byte sizes. Decimal prefixes are powers of 1000 (IEC 80000-13), binary ones powers of 1024;
 * "b"/"bit" are bits, an eighth of a byte. "kB" and "KB" are both read as 1000 bytes. */
static const unit_sym byte_syms[] = {
    {"B", 1}, {"byte", 1}, {"bytes", 1},
    {"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"PB", 1e15},
    {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
    {"PiB", 1125899906842624.0},
    {"b", 0.125}, {"bit", 0.125}, {"bits", 0.125},
    {"kb", 125}, {"Kb", 125}, {"kbit", 125}, {"Kbit", 125},
    {"Mb", 125e3}, {"Mbit", 125e3}, {"Gb", 125e6}, {"Gbit", 125e6}, {"Tb", 125e9}, {"Tbit", 125e9},
    {"Kibit", 128.0}, {"Mibit", 131072.0}, {"Gibit", 134217728.0}, {"Tibit", 137438953472.0},
    {NULL, 0},
};
static const unit_sym freq_syms[] = {
    {"Hz", 1}, {"kHz", 1e3}, {"KHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}, {"THz", 1e12},
    {"hz", 1}, {"khz", 1e3}, {"mhz", 1e6}, {"ghz", 1e9}, {"thz", 1e12},
    {NULL, 0},
};
static const unit_sym energy_syms[] = {
    {"aJ", 1e-18}, {"fJ", 1e-15}, {"pJ", 1e-12}, {"nJ", 1e-9}, {"uJ", 1e-6}, {"mJ", 1e-3},
    {"J", 1}, {"kJ", 1e3},
    {NULL, 0},
};
static const unit_sym time_syms[] = {
    {"fs", 1e-15}, {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1},
    {"sec", 1},
    {NULL, 0},
};
static const unit_sym power_syms[] = {
    {"nW", 1e-9}, {"uW", 1e-6}, {"mW", 1e-3}, {"W", 1}, {"kW", 1e3}, {"MW", 1e6},
    {NULL, 0},
};
static const unit_sym cycle_syms[] = {
    {"", 1}, {"cycle", 1}, {"cycles", 1}, {"cyc", 1}, {"clk", 1}, {"clks", 1},
    {NULL, 0},
};
static const unit_sym length_syms[] = {
    {"nm", 1e-9}, {"um", 1e-6}, {"mm", 1e-3}, {"cm", 1e-2}, {"m", 1}, {"km", 1e3},
    {NULL, 0},
};
static const unit_sym none_syms[] = {
    {"", 1},
    {NULL, 0},
};

/* Per kind: base symbol, noun, an example for messages, the accepted units for messages. */
static const struct kind_info {
    const char *symbol, *noun, *article, *example, *accepted;
} kinds[TS_UNIT_KIND_COUNT] = {
    [TS_UNIT_NONE] = {"", "number", "a", "4", "no unit"},
    [TS_UNIT_FREQ] = {"Hz", "frequency", "a", "1.6 GHz", "Hz, kHz, MHz, GHz or THz"},
    [TS_UNIT_BYTES] = {"B", "size", "a", "256 KiB", "B, KB, MB, GB, TB, KiB, MiB, GiB, TiB or bit"},
    [TS_UNIT_BANDWIDTH] = {"B/s", "bandwidth", "a", "6.3 GB/s", "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, "
                                                                   "MiB/s, GiB/s, TiB/s or Gbit/s"},
    [TS_UNIT_BPC] = {"B/cycle", "bytes-per-cycle rate", "a", "16 B/cycle", "B/cycle"},
    [TS_UNIT_ENERGY] = {"J", "energy", "an", "0.9 pJ", "fJ, pJ, nJ, uJ, mJ or J"},
    [TS_UNIT_TIME] = {"s", "time", "a", "165 ns", "ps, ns, us, ms or s"},
    [TS_UNIT_POWER] = {"W", "power", "a", "2.5 W", "uW, mW, W or kW"},
    [TS_UNIT_CYCLES] = {"cycles", "cycle count", "a", "12 cycles", "cycles"},
    [TS_UNIT_LENGTH] = {"m", "length", "a", "25 mm", "um, mm, cm or m"},
};

const char *ts_unit_symbol(ts_unit_kind kind)
{
    return (unsigned)kind < TS_UNIT_KIND_COUNT ? kinds[kind].symbol : "";
}

const char *ts_unit_noun(ts_unit_kind kind)
{
    return (unsigned)kind < TS_UNIT_KIND_COUNT ? kinds[kind].noun : "quantity";
}

static int lookup(const unit_sym *t, const char *s, double *mul)
{
    for (; t->sym; t++)
        if (!strcmp(t->sym, s)) {
            *mul = t->mul;
            return 0;
        }
    return -1;
}

/* Strip a rate suffix: "/s" or "ps" for bandwidth, "/cycle" and friends for B/cycle.
 * Returns 0 and the unit before the suffix in out, -1 if no such suffix. */
static int strip_suffix(const char *s, const char *const *sufs, char *out, size_t n)
{
    size_t len = strlen(s);
    for (; *sufs; sufs++) {
        size_t k = strlen(*sufs);
        if (len > k && !strcmp(s + len - k, *sufs) && len - k < n) {
            memcpy(out, s, len - k);
            out[len - k] = 0;
            return 0;
        }
    }
    return -1;
}

static const char *const per_second[] = {"/s", "/sec", "ps", NULL};
static const char *const per_cycle[] = {"/cycle", "/cyc", "/clk", NULL};

/* Multiplier of unit text u for kind; -1 if u is not a unit of that kind. */
static int unit_mul(ts_unit_kind kind, const char *u, double *mul)
{
    char head[32];
    if (!u[0]) { /* a plain number is in the base unit */
        *mul = 1;
        return 0;
    }
    switch (kind) {
    case TS_UNIT_NONE: return lookup(none_syms, u, mul);
    case TS_UNIT_FREQ: return lookup(freq_syms, u, mul);
    case TS_UNIT_BYTES: return lookup(byte_syms, u, mul);
    case TS_UNIT_BANDWIDTH:
        /* "Gbps" is Gbit/s, "GBps" GB/s: the byte table tells b from B. */
        if (strip_suffix(u, per_second, head, sizeof head))
            return -1;
        return lookup(byte_syms, head, mul);
    case TS_UNIT_BPC:
        if (strip_suffix(u, per_cycle, head, sizeof head))
            return -1;
        return lookup(byte_syms, head, mul);
    case TS_UNIT_ENERGY: return lookup(energy_syms, u, mul);
    case TS_UNIT_TIME: return lookup(time_syms, u, mul);
    case TS_UNIT_POWER: return lookup(power_syms, u, mul);
    case TS_UNIT_CYCLES: return lookup(cycle_syms, u, mul);
    case TS_UNIT_LENGTH: return lookup(length_syms, u, mul);
    case TS_UNIT_KIND_COUNT: break;
    }
    return -1;
}

/* Scan a decimal number at s: [+-] digits [. digits] [e [+-] digits]. Returns its length, 0 if
 * there is none. strtod alone would also take "inf", "nan" and hex, which are not quantities. */
static size_t scan_number(const char *s)
{
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    while (s[i] >= '0' && s[i] <= '9')
        i++, digits++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9')
            i++, digits++;
    }
    if (!digits)
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-')
            j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9')
                j++;
            i = j;
        }
    }
    return i;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static int fail(char *why, size_t n, ts_unit_kind kind, const char *text, const char *extra)
{
    if (why && n) {
        const struct kind_info *k = &kinds[(unsigned)kind < TS_UNIT_KIND_COUNT ? kind : TS_UNIT_NONE];
        snprintf(why, n, "expected %s %s like '%s', got '%s'%s", k->article, k->noun, k->example, text,
                 extra ? extra : "");
    }
    return -1;
}

int ts_unit_parse(const char *text, ts_unit_kind kind, double *out, char *why, size_t why_len)
{
    if (!text)
        text = "";
    if ((unsigned)kind >= TS_UNIT_KIND_COUNT)
        kind = TS_UNIT_NONE;
    /* Trimmed copy for messages and scanning; quantities are short. */
    char buf[128];
    const char *s = text;
    while (is_space(*s))
        s++;
    size_t len = strlen(s);
    while (len && is_space(s[len - 1]))
        len--;
    if (len >= sizeof buf)
        return fail(why, why_len, kind, "...", " (too long)");
    memcpy(buf, s, len);
    buf[len] = 0;

    size_t nl = scan_number(buf);
    if (!nl)
        return fail(why, why_len, kind, buf, NULL);
    char num[128];
    memcpy(num, buf, nl);
    num[nl] = 0;
    errno = 0;
    double v = strtod(num, NULL);
    if (errno == ERANGE && fabs(v) > 1)
        return fail(why, why_len, kind, buf, " (too large)");

    /* The unit, with µ written as u. */
    const char *u = buf + nl;
    while (is_space(*u))
        u++;
    char unit[64];
    size_t k = 0;
    for (size_t i = 0; u[i] && k + 1 < sizeof unit; i++) {
        unsigned char c = (unsigned char)u[i];
        if ((c == 0xC2 && (unsigned char)u[i + 1] == 0xB5) || (c == 0xCE && (unsigned char)u[i + 1] == 0xBC)) {
            unit[k++] = 'u';
            i++;
        } else {
            unit[k++] = (char)c;
        }
    }
    unit[k] = 0;

    double mul;
    if (unit_mul(kind, unit, &mul)) {
        /* Say which kind the unit belongs to, when it is one we know. */
        char extra[192];
        for (int other = 1; other < TS_UNIT_KIND_COUNT; other++) {
            double m2;
            if (other == (int)kind || !unit[0] || unit_mul((ts_unit_kind)other, unit, &m2))
                continue;
            snprintf(extra, sizeof extra, " ('%s' is a unit of %s; use %s)", unit,
                     kinds[other].noun, kinds[kind].accepted);
            return fail(why, why_len, kind, buf, extra);
        }
        if (kind == TS_UNIT_NONE)
            snprintf(extra, sizeof extra, " (a plain number, without a unit)");
        else
            snprintf(extra, sizeof extra, " (unknown unit '%s'; use %s)", unit, kinds[kind].accepted);
        return fail(why, why_len, kind, buf, extra);
    }
    v *= mul;
    if (!isfinite(v))
        return fail(why, why_len, kind, buf, " (too large)");
    *out = v;
    return 0;
}

/* Prefix ladders for formatting: symbol and factor, smallest first. */
static const unit_sym fmt_freq[] = {{"Hz", 1}, {"kHz", 1e3}, {"MHz", 1e6}, {"GHz", 1e9}, {"THz", 1e12}, {NULL, 0}};
static const unit_sym fmt_dec_bytes[] = {{"B", 1}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
                                         {"PB", 1e15}, {NULL, 0}};
static const unit_sym fmt_bin_bytes[] = {{"B", 1}, {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0},
                                         {"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0}, {NULL, 0}};
static const unit_sym fmt_energy[] = {{"aJ", 1e-18}, {"fJ", 1e-15}, {"pJ", 1e-12}, {"nJ", 1e-9}, {"uJ", 1e-6},
                                      {"mJ", 1e-3}, {"J", 1}, {"kJ", 1e3}, {NULL, 0}};
static const unit_sym fmt_time[] = {{"fs", 1e-15}, {"ps", 1e-12}, {"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3},
                                    {"s", 1}, {NULL, 0}};
static const unit_sym fmt_power[] = {{"nW", 1e-9}, {"uW", 1e-6}, {"mW", 1e-3}, {"W", 1}, {"kW", 1e3},
                                     {"MW", 1e6}, {NULL, 0}};
static const unit_sym fmt_length[] = {{"nm", 1e-9}, {"um", 1e-6}, {"mm", 1e-3}, {"m", 1}, {"km", 1e3},
                                      {NULL, 0}};

/* A whole number of 1024s is shown with binary prefixes ("256 KiB"), anything else decimal. */
static int is_binary(double a)
{
    return a >= 1024 && a < 9e15 && fmod(a, 1024.0) == 0;
}

/* Print a with up to 4 significant digits using the largest step of the ladder not above it. */
static void format_ladder(double v, const unit_sym *lad, const char *tail, char *buf, size_t n)
{
    double a = fabs(v);
    size_t cnt = 0;
    while (lad[cnt].sym)
        cnt++;
    size_t pick = 0;
    if (a > 0) {
        for (size_t i = 0; i < cnt; i++)
            if (a >= lad[i].mul)
                pick = i;
        /* 999.96 MHz rounds to "1000 MHz": prefer "1 GHz". */
        if (pick + 1 < cnt) {
            char t[32];
            snprintf(t, sizeof t, "%.4g", a / lad[pick].mul);
            if (strtod(t, NULL) * lad[pick].mul >= lad[pick + 1].mul)
                pick++;
        }
    } else {
        for (size_t i = 0; i < cnt; i++)
            if (lad[i].mul == 1)
                pick = i;
    }
    snprintf(buf, n, "%.4g %s%s", v / lad[pick].mul, lad[pick].sym, tail);
}

void ts_unit_format(double v, ts_unit_kind kind, char *buf, size_t n)
{
    if (!buf || !n)
        return;
    if (!isfinite(v)) {
        snprintf(buf, n, "%s%s%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf",
                 (unsigned)kind < TS_UNIT_KIND_COUNT && kinds[kind].symbol[0] ? " " : "",
                 (unsigned)kind < TS_UNIT_KIND_COUNT ? kinds[kind].symbol : "");
        return;
    }
    double a = fabs(v);
    switch (kind) {
    case TS_UNIT_FREQ: format_ladder(v, fmt_freq, "", buf, n); return;
    case TS_UNIT_BYTES: format_ladder(v, is_binary(a) ? fmt_bin_bytes : fmt_dec_bytes, "", buf, n); return;
    case TS_UNIT_BANDWIDTH:
        /* Always decimal, as bandwidths are published (31.1 TB/s): a measured rate that happens
         * to be a multiple of 1024 must not switch to TiB/s. */
        format_ladder(v, fmt_dec_bytes, "/s", buf, n);
        return;
    case TS_UNIT_BPC:
        format_ladder(v, is_binary(a) ? fmt_bin_bytes : fmt_dec_bytes, "/cycle", buf, n);
        return;
    case TS_UNIT_ENERGY: format_ladder(v, fmt_energy, "", buf, n); return;
    case TS_UNIT_TIME: format_ladder(v, fmt_time, "", buf, n); return;
    case TS_UNIT_POWER: format_ladder(v, fmt_power, "", buf, n); return;
    case TS_UNIT_LENGTH: format_ladder(v, fmt_length, "", buf, n); return;
    case TS_UNIT_CYCLES:
    case TS_UNIT_NONE:
    case TS_UNIT_KIND_COUNT:
        break;
    }
    /* Counts: whole numbers exactly, others with 4 significant digits. */
    const char *tail = kind == TS_UNIT_CYCLES ? (a == 1 ? " cycle" : " cycles") : "";
    if (a < 1e15 && v == floor(v))
        snprintf(buf, n, "%.0f%s", v, tail);
    else
        snprintf(buf, n, "%.4g%s", v, tail);
}
