/* core/isa.c — look-ups in a family's ISA table. Tables are small (< 256 ops): linear search is
 * used only by the assembler, never in a cycle loop. */
#include "core/isa.h"

#include <string.h>

int ts_isa_nopnds(const ts_opinfo *op)
{
    int n = 0;
    while (n < TS_MAX_OPNDS && op->opnd[n])
        n++;
    return n;
}

int ts_isa_find(const ts_isa *isa, const char *mnemonic, size_t len)
{
    for (size_t i = 0; i < isa->nops; i++)
        if (strlen(isa->ops[i].mnemonic) == len && !strncmp(isa->ops[i].mnemonic, mnemonic, len))
            return (int)i;
    return -1;
}

int ts_isa_reg(const ts_isa *isa, const char *name, size_t len)
{
    for (size_t i = 0; i < isa->nregs; i++)
        if (isa->regs[i] && strlen(isa->regs[i]) == len && !strncmp(isa->regs[i], name, len))
            return (int)i;
    return -1;
}
