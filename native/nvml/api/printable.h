/* Text a workload wrote, made safe to hand a terminal or a UTF-8 decoder (printable.c). */
#ifndef MOKKA_NVML_PRINTABLE_H
#define MOKKA_NVML_PRINTABLE_H

#include <stddef.h>

/* `src` into `out` (`size` bytes with its NUL, size > 0) as printable UTF-8: each byte
 * of an invalid, overlong or surrogate sequence and each C0 control, DEL and C1 control
 * (U+0080-U+009F) becomes '?'; cut before a character that does not fit, never inside one.
 * `out` may be `src` (the text is made printable in place). */
void printable_copy(char *out, size_t size, const char *src);

#endif
