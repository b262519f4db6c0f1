/* tests/calibration/calib.h — the calibration table every family's calibration test prints.
 *
 * A row compares one measured figure with one published figure (research/<family>.md) and says
 * what kind of evidence it is:
 *
 *   emergent    the model produces the figure from lower-level facts (other sources' numbers, the
 *               ISA, the timing model); no config value was set or fitted to it. Its band is the
 *               precision or spread of the published figure, said in `basis`.
 *   configured  a config value was set or fitted to this very figure, so the row can fail only if
 *               the plumbing between the config and the measurement breaks. The row checks that the
 *               config's own comment says so (cal_configured: the key's line in configs/<name>.yaml
 *               must contain `says`), so a configured row cannot pass as if it were emergent.
 *
 * A row whose published figure needs a part the model leaves out is a known gap (cal_gap): it is
 * measured and printed with "fail (not modelled: ...)", never asserted green.
 *
 * Header-only: each calibration test includes it once. Rows live in the test process; a test
 * that prints its table runs its cases without forking (CK_NOFORK).
 */
#ifndef TS_TESTS_CALIBRATION_CALIB_H
#define TS_TESTS_CALIBRATION_CALIB_H

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { CAL_EMERGENT, CAL_CONFIGURED } cal_kind;

typedef struct cal_row {
    char figure[112];
    char config[48];
    const char *unit, *source;
    double published, lo, hi, measured; /* passes when lo <= measured <= hi */
    cal_kind kind;
    const char *basis; /* emergent: why the band; configured: the key set or fitted to the figure */
    const char *gap;   /* non-NULL: "not modelled: ..." — reported, not asserted */
} cal_row;

enum { CAL_MAX_ROWS = 48 };
static cal_row cal_rows[CAL_MAX_ROWS];
static size_t cal_nrows;

static inline cal_row *cal_add(const char *figure, const char *config, double measured, double published, double lo,
                               double hi, const char *unit, const char *source, cal_kind kind, const char *basis)
{
    ck_assert_msg(cal_nrows < CAL_MAX_ROWS, "calibration: more than %d rows", CAL_MAX_ROWS);
    cal_row *w = &cal_rows[cal_nrows++];
    snprintf(w->figure, sizeof w->figure, "%s", figure);
    snprintf(w->config, sizeof w->config, "%s", config);
    w->unit = unit;
    w->source = source;
    w->published = published;
    w->lo = lo;
    w->hi = hi;
    w->measured = measured;
    w->kind = kind;
    w->basis = basis;
    w->gap = NULL;
    return w;
}

static inline void cal_assert(const cal_row *w)
{
    ck_assert_msg(w->measured >= w->lo && w->measured <= w->hi, "%s on %s: measured %g %s, published %g (accepted %g..%g)",
                  w->figure, w->config, w->measured, w->unit, w->published, w->lo, w->hi);
}

/* An emergent row: asserted within [lo, hi]; `basis` justifies the band in one line. */
static inline void cal_emergent(const char *figure, const char *config, double measured, double published, double lo,
                                double hi, const char *unit, const char *source, const char *basis)
{
    cal_assert(cal_add(figure, config, measured, published, lo, hi, unit, source, CAL_EMERGENT, basis));
}

/* The line of `key` ("section.name" or "name") in configs/<yaml>.yaml of the source tree
 * (TS_SOURCE_ROOT, else ".", as tests/arch/arch_test.h loads configs), as a NUL-terminated copy in
 * buf; the test fails if there is none. */
static inline void cal_yaml_line(const char *yaml, const char *key, char *buf, size_t cap)
{
    const char *root = getenv("TS_SOURCE_ROOT");
    char path[1024];
    snprintf(path, sizeof path, "%s/configs/%s.yaml", root ? root : ".", yaml);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "calibration: cannot read %s", path);
    static char text[1 << 16];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    const char *dot = strchr(key, '.');
    char sect[64] = "";
    const char *leaf = key;
    if (dot) {
        snprintf(sect, sizeof sect, "%.*s", (int)(dot - key), key);
        leaf = dot + 1;
    }
    bool in = !dot;
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t ind = 0;
        while (ind < n && p[ind] == ' ')
            ind++;
        const char *s = p + ind;
        size_t sl = n - ind;
        if (dot && ind == 0 && sl > 0 && s[0] != '#')
            in = sl > strlen(sect) && !strncmp(s, sect, strlen(sect)) && s[strlen(sect)] == ':';
        else if (in && (dot ? ind > 0 : ind == 0) && sl > strlen(leaf) && !strncmp(s, leaf, strlen(leaf)) &&
                 s[strlen(leaf)] == ':') {
            snprintf(buf, cap, "%.*s", (int)n, p);
            return;
        }
        p += n + 1;
    }
    ck_abort_msg("calibration: %s has no key %s", yaml, key);
}

/* A configured row: asserted within [lo, hi], and the line of `key` in the built-in config `yaml`
 * must contain `says` (the value or the comment naming the figure it was set or fitted to). */
static inline void cal_configured(const char *figure, const char *config, double measured, double published, double lo,
                                  double hi, const char *unit, const char *source, const char *yaml, const char *key,
                                  const char *says, const char *basis)
{
    char line[512];
    cal_yaml_line(yaml, key, line, sizeof line);
    ck_assert_msg(strstr(line, says), "configured row \"%s\": %s.yaml line of %s does not say \"%s\": %s", figure, yaml,
                  key, says, line);
    cal_assert(cal_add(figure, config, measured, published, lo, hi, unit, source, CAL_CONFIGURED, basis));
}

/* A known gap: the published figure needs a part the model leaves out. Measured and printed as
 * "fail (not modelled: ...)" when outside [lo, hi]; never asserted. */
static inline void cal_gap(const char *figure, const char *config, double measured, double published, double lo,
                           double hi, const char *unit, const char *source, cal_kind kind, const char *basis,
                           const char *not_modelled)
{
    cal_row *w = cal_add(figure, config, measured, published, lo, hi, unit, source, kind, basis);
    w->gap = not_modelled;
}

/* %.4g, but whole numbers of 10,000 and more in full (409600, not 4.096e+05). */
static inline const char *cal_num(char *buf, size_t cap, double x)
{
    if (x >= 1e4 && x < 1e15 && x == (double)(long long)x)
        snprintf(buf, cap, "%lld", (long long)x);
    else
        snprintf(buf, cap, "%.4g", x);
    return buf;
}

static inline void cal_print(FILE *f)
{
    fprintf(f, "| figure | kind | config | measured | published | accepted | unit | source | basis of the band or "
               "the fit | verdict |\n");
    fprintf(f, "|---|---|---|---|---|---|---|---|---|---|\n");
    size_t ne = 0, nc = 0, ng = 0;
    for (size_t i = 0; i < cal_nrows; i++) {
        const cal_row *w = &cal_rows[i];
        bool ok = w->measured >= w->lo && w->measured <= w->hi;
        char verdict[256];
        if (ok)
            snprintf(verdict, sizeof verdict, "pass");
        else if (w->gap)
            snprintf(verdict, sizeof verdict, "fail (%s)", w->gap);
        else
            snprintf(verdict, sizeof verdict, "FAIL");
        ne += w->kind == CAL_EMERGENT;
        nc += w->kind == CAL_CONFIGURED;
        ng += !ok && w->gap;
        char m[32], p[32], lo[32], hi[32];
        fprintf(f, "| %s | %s | %s | %s | %s | %s .. %s | %s | %s | %s | %s |\n", w->figure,
                w->kind == CAL_EMERGENT ? "emergent" : "configured", w->config, cal_num(m, sizeof m, w->measured),
                cal_num(p, sizeof p, w->published), cal_num(lo, sizeof lo, w->lo), cal_num(hi, sizeof hi, w->hi), w->unit,
                w->source, w->basis, verdict);
    }
    fprintf(f, "\n%zu rows: %zu emergent, %zu configured; %zu known gap%s.\n", cal_nrows, ne, nc, ng, ng == 1 ? "" : "s");
}

#endif
