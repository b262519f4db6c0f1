/* core/disasm.c — to be written */
#include "core/err.h"
typedef int ts_placeholder_disasm_;
