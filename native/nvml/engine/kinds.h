/* The documents the library reads, as kinds of flat.h: their bounds (mokka/core/names.py)
 * and what else each must hold before anything of it is used. */
#ifndef MOKKA_KINDS_H
#define MOKKA_KINDS_H

#include "flat.h"

extern const struct flat_kind KIND_STATE;      /* config.nvml: the compiled state */
extern const struct flat_kind KIND_OVERRIDES;  /* overrides/<scope>.nvml: one scope's fields */
extern const struct flat_kind KIND_EVENTS;     /* xid-events.nvml: the injected Xids */

#endif
