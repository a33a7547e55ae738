/* Forced into every translation unit by native/build.py (-include visibility.h).
 *
 * The library is compiled with -fvisibility=hidden so that nothing but the NVML
 * API leaves it. A function takes the visibility of its first declaration, so
 * declaring nvml.h's functions under "default" exports exactly those wherever
 * they are defined, while mock_* helpers and statics stay hidden. The names
 * NVIDIA exports beyond nvml.h carry the attribute where they are defined
 * (export_table.c, the generated stubs.c). The linker version script then
 * drops everything not named nvml*.
 */
#ifndef MOKKA_NVML_VISIBILITY_H
#define MOKKA_NVML_VISIBILITY_H

#pragma GCC visibility push(default)
#include <nvml.h>
#pragma GCC visibility pop

#define MOKKA_EXPORT __attribute__((visibility("default")))

#endif
