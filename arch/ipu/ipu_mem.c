/* arch/ipu/ipu_mem.c — tile memory, paged: a tile's memory is pages allocated on first write
 * (unwritten ones read as the model's zero page). Here the bulk copies (program data, host
 * transfers) and what tests and tools read; the executor's per-access pointers, rd_ptr and
 * wr_ptr, are inline in ipu_int.h.
 */
#include <inttypes.h>
#include <string.h>

#include "arch/ipu/ipu.h"
#include "arch/ipu/ipu_int.h"

ts_status ts_ipu_mem_write_bytes(ts_model *m, ipu_tile *t, uint64_t a, const uint8_t *src, uint64_t len, ts_err *err)
{
    t->effects++; /* memory a context may read changes (core/loopmark.h) */
    while (len) {
        uint64_t chunk = IPU_PAGE_SIZE - (a & (IPU_PAGE_SIZE - 1));
        if (chunk > len)
            chunk = len;
        uint8_t *p = wr_ptr(t, a, (uint32_t)chunk);
        if (!p)
            return ts_err_set(err, TS_ENOMEM, "out of memory for tile memory");
        memcpy(p, src, chunk);
        a += chunk;
        src += chunk;
        len -= chunk;
    }
    (void)m;
    return TS_OK;
}

void ts_ipu_mem_read_bytes(ts_model *m, ipu_tile *t, uint64_t a, uint8_t *dst, uint64_t len)
{
    while (len) {
        uint64_t chunk = IPU_PAGE_SIZE - (a & (IPU_PAGE_SIZE - 1));
        if (chunk > len)
            chunk = len;
        memcpy(dst, rd_ptr(m, t, a), chunk);
        a += chunk;
        dst += chunk;
        len -= chunk;
    }
}

ts_status ts_ipu_read(ts_model *m, uint32_t tile, uint64_t addr, void *dst, size_t len, ts_err *err)
{
    if (tile >= m->ntiles || addr + len > m->c.sram_bytes)
        return ts_err_set(err, TS_EINPUT, "no %zu bytes at %" PRIu64 " on tile %u", len, addr, tile);
    ts_ipu_mem_read_bytes(m, &m->t[tile], addr, dst, len);
    return TS_OK;
}

uint64_t ts_ipu_memhash(ts_model *m)
{
    uint64_t h = 1469598103934665603ull;
    for (uint32_t i = 0; i < m->ntiles; i++) {
        ipu_tile *t = &m->t[i];
        for (uint64_t a = 0; a < t->mem_hi; a++) {
            h ^= *rd_ptr(m, t, a);
            h *= 1099511628211ull;
        }
        h ^= t->mem_hi;
        h *= 1099511628211ull;
    }
    return h;
}
