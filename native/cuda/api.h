/* Forced into every translation unit of the mock CUDA driver by native/build.py
 * (-include cuda/api.h).
 *
 * cuda.h (PyPI nvidia-cuda-runtime-cu12, never committed) read as the driver
 * reads it: with __CUDA_API_VERSION_INTERNAL it declares every ABI version of
 * a function under its own name (cuMemAlloc with 32-bit sizes beside
 * cuMemAlloc_v2, cuMemcpyHtoD_v2_ptds beside cuMemcpyHtoD_v2) instead of
 * mapping the plain names onto the newest, and with
 * __CUDA_API_PUSH_VISIBILITY_DEFAULT its functions are declared with default
 * visibility, so exactly those leave the library (-fvisibility=hidden) wherever
 * they are defined; the linker version script keeps only cu*.
 */
#ifndef MOKKA_CUDA_API_H
#define MOKKA_CUDA_API_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE                    /* before cuda.h's libc headers, for every file */
#endif
#define __CUDA_API_VERSION_INTERNAL 1
#define __CUDA_API_PUSH_VISIBILITY_DEFAULT 1
#include <cuda.h>

#define CU_EXPORT __attribute__((visibility("default")))
/* Another exported name for `target`, with its prototype (a per-thread-stream
 * variant, or an older ABI version that takes the same arguments). */
#define CU_ALIAS(name, target) CU_EXPORT __typeof__(target) name __attribute__((alias(#target)))

#endif
