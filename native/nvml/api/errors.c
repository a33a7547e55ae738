/* nvmlErrorString: NVIDIA's own texts, one per nvmlReturn_t.
 *
 * Read off NVIDIA's libnvidia-ml.so 550.163.01 (Debian trixie non-free
 * libnvidia-ml1) without loading it: its nvmlErrorString is a jump table over
 * 0..29 into these strings, and everything else (999 included) reads
 * "Unknown Error". Callers print them verbatim (nvidia-smi, pynvml's
 * NVMLError, nvtop), so a changed word shows up in their output.
 */
#include <stddef.h>
#include <nvml.h>

static const char *const error_text[] = {
    [NVML_SUCCESS] = "Success",
    [NVML_ERROR_UNINITIALIZED] = "Uninitialized",
    [NVML_ERROR_INVALID_ARGUMENT] = "Invalid Argument",
    [NVML_ERROR_NOT_SUPPORTED] = "Not Supported",
    [NVML_ERROR_NO_PERMISSION] = "Insufficient Permissions",
    [NVML_ERROR_ALREADY_INITIALIZED] = "Already Initialized",
    [NVML_ERROR_NOT_FOUND] = "Not Found",
    [NVML_ERROR_INSUFFICIENT_SIZE] = "Insufficient Size",
    [NVML_ERROR_INSUFFICIENT_POWER] = "Insufficient External Power",
    [NVML_ERROR_DRIVER_NOT_LOADED] = "Driver Not Loaded",
    [NVML_ERROR_TIMEOUT] = "Timeout",
    [NVML_ERROR_IRQ_ISSUE] = "Interrupt Request Issue",
    [NVML_ERROR_LIBRARY_NOT_FOUND] = "NVML Shared Library Not Found",
    [NVML_ERROR_FUNCTION_NOT_FOUND] = "Function Not Found",
    [NVML_ERROR_CORRUPTED_INFOROM] = "Corrupted infoROM",
    [NVML_ERROR_GPU_IS_LOST] = "GPU is lost",
    [NVML_ERROR_RESET_REQUIRED] = "GPU requires reset",
    [NVML_ERROR_OPERATING_SYSTEM] = "GPU access blocked by the operating system",
    [NVML_ERROR_LIB_RM_VERSION_MISMATCH] = "Driver/library version mismatch",
    [NVML_ERROR_IN_USE] = "In use by another client",
    [NVML_ERROR_MEMORY] = "Insufficient Memory",
    [NVML_ERROR_NO_DATA] = "No data",
    [NVML_ERROR_VGPU_ECC_NOT_SUPPORTED] = "vGPU ECC not supported",
    [NVML_ERROR_INSUFFICIENT_RESOURCES] = "Insufficient Resources",
    [NVML_ERROR_FREQ_NOT_SUPPORTED] = "Invalid Frequency",
    [NVML_ERROR_ARGUMENT_VERSION_MISMATCH] = "Argument version mismatch",
    [NVML_ERROR_DEPRECATED] = "Requested functionality has been deprecated",
    [NVML_ERROR_NOT_READY] = "System is not in ready state",
    [NVML_ERROR_GPU_NOT_FOUND] = "No supported GPUs were found",
    [NVML_ERROR_INVALID_STATE] = "Resource not in correct state to perform requested operation",
};

const DECLDIR char* nvmlErrorString(nvmlReturn_t result)
{
    size_t i = (size_t)result;      /* enum may be signed: negatives wrap past the table */
    if (i < sizeof error_text / sizeof error_text[0] && error_text[i] != NULL)
        return error_text[i];
    return "Unknown Error";
}
