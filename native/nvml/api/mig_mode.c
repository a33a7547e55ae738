/* nvmlDeviceSetMigMode: the MIG room changes the mode (../mig/mig.c); this room
 * tells it whether a process holds the GPU, which only the process records know
 * (processes.c): a live CUDA process record of the GPU, whether the process runs on
 * the whole GPU or on one of its MIG devices (a record names the physical GPU). */
#include "api.h"
#include "mig/mig.h"
#include "processes.h"

nvmlReturn_t DECLDIR nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t *activationStatus)
{
    const struct mock_gpu *g;
    nvmlReturn_t ret = mock_gpu_of(device, &g);
    if (ret != NVML_SUCCESS)
        return ret;
    return mig_set_mode(device, mode, mock_processes_hold(g), activationStatus);
}
