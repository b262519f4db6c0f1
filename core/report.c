/* core/report.c — to be written */
#include "core/err.h"
typedef int ts_placeholder_report_;
