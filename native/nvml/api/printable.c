/* Printable UTF-8 out of any bytes: what NVML returns as a process's name.
 *
 * A name comes from a file or a command line a workload wrote. Its consumers
 * decode it as UTF-8 (pynvml's nvmlSystemGetProcessName raises on invalid bytes,
 * which stops gpustat and nvitop) and print it on a terminal (both nvidia-smis),
 * where a C1 control such as CSI (0x9b, or U+009B encoded) starts an escape
 * sequence, and a bidirectional control (U+200E-200F, U+202A-202E, U+2066-2069)
 * reorders the rest of the line on a terminal that honours them. So each byte of
 * a character that is not valid UTF-8, a control or a bidirectional control is
 * one '?', and a truncated name ends on a whole character.
 */
#include "printable.h"

/* The length of the printable character at `p` (1-4), or 0 when its first byte is
 * not the start of one. A NUL is never a continuation byte, so no read passes it. */
static size_t printable_char(const unsigned char *p)
{
    unsigned char c = p[0];
    if (c < 0x80)
        return c >= 0x20 && c != 0x7f ? 1 : 0;
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf;           /* the second byte's range */
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        if (c == 0xc2)
            lo = 0xa0;                            /* U+0080-U+009F: the C1 controls */
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0)
            lo = 0xa0;                            /* overlong */
        else if (c == 0xed)
            hi = 0x9f;                            /* UTF-16 surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0)
            lo = 0x90;                            /* overlong */
        else if (c == 0xf4)
            hi = 0x8f;                            /* past U+10FFFF */
    } else {
        return 0;
    }
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    if (c == 0xe2 && ((p[1] == 0x80 && ((p[2] >= 0x8e && p[2] <= 0x8f) || (p[2] >= 0xaa && p[2] <= 0xae))) ||
                      (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
        return 0;                                 /* a bidirectional control */
    return len;
}

void printable_copy(char *out, size_t size, const char *src)
{
    const unsigned char *p = (const unsigned char *)src;
    size_t at = 0;
    while (*p) {
        size_t len = printable_char(p);
        size_t put = len ? len : 1;
        if (at + put >= size)
            break;
        for (size_t i = 0; i < len; i++)
            out[at + i] = (char)p[i];
        if (!len)
            out[at] = '?';
        at += put;
        p += put;
    }
    out[at] = '\0';
}
