/* A program of the CUDA driver API alone, built by the tests with the machine's compiler
 * against PyPI's cuda.h and linked with -lcuda: init, enumerate, allocate, copy there and
 * back. Prints one line per device ("device N NAME GPU-uuid") and "round trip ok". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define CHECK(call)                                                          \
    do {                                                                     \
        CUresult r_ = (call);                                                \
        if (r_ != CUDA_SUCCESS) {                                            \
            const char *name_ = NULL;                                        \
            cuGetErrorName(r_, &name_);                                      \
            fprintf(stderr, "%s: %s (%d)\n", #call, name_ ? name_ : "?", r_); \
            return 1;                                                        \
        }                                                                    \
    } while (0)

int main(void)
{
    int count = 0, version = 0;
    CHECK(cuInit(0));
    CHECK(cuDriverGetVersion(&version));
    CHECK(cuDeviceGetCount(&count));
    printf("driver %d devices %d\n", version, count);
    for (int i = 0; i < count; i++) {
        CUdevice dev;
        CUuuid u;
        char name[256];
        CHECK(cuDeviceGet(&dev, i));
        CHECK(cuDeviceGetName(name, sizeof name, dev));
        CHECK(cuDeviceGetUuid(&u, dev));
        printf("device %d %s GPU-", i, name);
        for (int b = 0; b < 16; b++)
            printf("%s%02x", b == 4 || b == 6 || b == 8 || b == 10 ? "-" : "", (unsigned char)u.bytes[b]);
        printf("\n");
    }
    CUcontext ctx;
    CUdevice first;
    CHECK(cuDeviceGet(&first, 0));
    CHECK(cuCtxCreate(&ctx, 0, first));
    size_t n = 64u << 20;
    unsigned char *out = malloc(n), *back = malloc(n);
    if (!out || !back)
        return 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (unsigned char)(i * 31 + 7);
    CUdeviceptr p;
    CHECK(cuMemAlloc(&p, n));
    CHECK(cuMemcpyHtoD(p, out, n));
    CHECK(cuMemcpyDtoH(back, p, n));
    CHECK(cuMemFree(p));
    CHECK(cuCtxDestroy(ctx));
    if (memcmp(out, back, n) != 0) {
        fprintf(stderr, "round trip differs\n");
        return 1;
    }
    printf("round trip ok\n");
    return 0;
}
