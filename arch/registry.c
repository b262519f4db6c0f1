/* arch/registry.c — the only place that knows every family: one line each. */
#include "arch/registry.h"

#include <string.h>

#ifdef TS_HAVE_IPU
extern const ts_family ts_ipu_family;
#endif
#ifdef TS_HAVE_TSP
extern const ts_family ts_tsp_family;
#endif
#ifdef TS_HAVE_WSE
extern const ts_family ts_wse_family;
#endif

static const ts_family *const families[] = {
#ifdef TS_HAVE_IPU
    &ts_ipu_family,
#endif
#ifdef TS_HAVE_TSP
    &ts_tsp_family,
#endif
#ifdef TS_HAVE_WSE
    &ts_wse_family,
#endif
    NULL,
};

size_t ts_family_count(void) { return sizeof families / sizeof families[0] - 1; }

const ts_family *ts_family_at(size_t i) { return i < ts_family_count() ? families[i] : NULL; }

const ts_family *ts_family_find(const char *name)
{
    for (size_t i = 0; i < ts_family_count(); i++)
        if (!strcmp(families[i]->name, name))
            return families[i];
    return NULL;
}

const ts_schema *ts_registry_schema(const char *arch)
{
    const ts_family *f = ts_family_find(arch);
    return f ? f->schema : NULL;
}
