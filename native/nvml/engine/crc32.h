/* CRC-32 (the IEEE 802.3 polynomial, reflected, as zlib and Python's zlib.crc32 compute
 * it): the checksum a companion carries of its own body (flat.h). */
#ifndef MOKKA_CRC32_H
#define MOKKA_CRC32_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32_of(const void *data, size_t len);

#endif
