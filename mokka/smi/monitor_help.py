"""The help texts of NVIDIA's nvidia-smi 550 ``dmon`` and ``pmon``, as its binary prints
them, and its answers to a bad command line (the message, a blank line and the usage part
of the help; exit status 0, as 550 exits), which it gives before it opens the library.
"""

from __future__ import annotations

DMON_HELP = """
    GPU statistics are displayed in scrolling format with one line
    per sampling interval. Metrics to be monitored can be adjusted
    based on the width of terminal window. Monitoring is limited to
    a maximum of 16 devices. If no devices are specified, then up to
    first 16 supported devices under natural enumeration (starting
    with GPU index 0) are used for monitoring purpose.
    It is supported on Tesla, GRID, Quadro and limited GeForce products
    for Kepler or newer GPUs under x64 and ppc64 bare metal Linux.
    Note: On MIG-enabled GPUs, querying the utilization of encoder,
    decoder, jpeg, ofa, gpu, and memory is not currently supported.

    Usage: nvidia-smi dmon [options]

    Options include:
    [-i | --id]:          Comma separated Enumeration index, PCI bus ID or UUID
    [-d | --delay]:       Collection delay/interval in seconds [default=1sec]
    [-c | --count]:       Collect specified number of samples and exit
    [-s | --select]:      One or more metrics [default=puc]
                          Can be any of the following:
                              p - Power Usage and Temperature
                              u - Utilization
                              c - Proc and Mem Clocks
                              v - Power and Thermal Violations
                              m - FB, Bar1 and CC Protected Memory
                              e - ECC Errors and PCIe Replay errors
                              t - PCIe Rx and Tx Throughput
    [N/A | --gpm-metrics]: Comma-separated list of GPM metrics to watch
                           Available metrics:
                               Graphics Activity    = 1
                               SM Activity          = 2
                               SM Occupancy         = 3
                               Integer Activity     = 4
                               Tensor Activity      = 5
                               DFMA Tensor Activity = 6
                               HMMA Tensor Activity = 7
                               IMMA Tensor Activity = 9
                               DRAM Activity        = 10
                               FP64 Activity        = 11
                               FP32 Activity        = 12
                               FP16 Activity        = 13
                               PCIe TX              = 20
                               PCIe RX              = 21
                               NVDEC 0-7 Activity   = 30-37
                               NVJPG 0-7 Activity   = 40-47
                               NVOFA 0 Activity     = 50
                               NVLink Total RX      = 60
                               NVLink Total TX      = 61
                               NVLink L0-17 RX      = 62, 64, 66, ..., 96
                               NVLink L0-17 TX      = 63, 65, 67, ..., 97

    [N/A | --gpm-options]: options of which level of GPM metrics to monitor:
                              d  - Display Device level GPM Metrics only
                              m  - Display MIG level GPM Metrics only
                              dm - Display both Device and MIG level GPM Metrics only
                              md - Display both Device and MIG level GPM Metrics only
    [-o | --options]:     One or more from the following:
                              D - Include Date (YYYYMMDD) in scrolling output
                              T - Include Time (HH:MM:SS) in scrolling output
    [-f | --filename]:    Log to a specified file, rather than to stdout
    [-h | --help]:        Display help information
    [N/A | --format]:     Output format specifiers:
                               csv - Format dmon output as a CSV
                               nounit - Remove units line from dmon output
                               noheader - Remove heading line from dmon output


"""

# One line of 550's pmon help ends in a space, kept here without trailing whitespace.
PMON_HELP = """
    Process statistics are displayed in scrolling format per sampling
    interval. This tool lists the statistics for all the compute and{TRAILING}
    graphics processes running on each device. Metrics to be monitored
     can be adjusted based on the width of terminal window. Monitoring
    is limited to a maximum of 4 devices. If no devices are specified,
    then up to first four supported devices under natural enumeration
    (starting with GPU index 0) are used for monitoring purpose.
    It is supported on Tesla, GRID, Quadro and limited GeForce products
    for Kepler or newer GPUs under x64 and ppc64 bare metal Linux.
    Note: On MIG-enabled GPUs, querying the utilization of encoder,
    decoder, jpeg, ofa, gpu, and memory is not currently supported.

    Usage: nvidia-smi pmon [options]

    Options include:
    [-i | --id]:          Comma separated Enumeration index, PCI bus ID or UUID
    [-d | --delay]:       Collection delay/interval in seconds [default=1sec, max=10secs]
    [-c | --count]:       Collect specified number of samples and exit
    [-s | --select]:      One or more metrics [default=u]
                          Can be any of the following:
                              u - Utilization
                              m - FB and CC Protected memory usage
    [-o | --options]:     One or more from the following:
                              D - Include Date (YYYYMMDD) in scrolling output
                              T - Include Time (HH:MM:SS) in scrolling output
    [-f | --filename]:    Log to a specified file, rather than to stdout
    [-h | --help]:        Display help information


""".replace("{TRAILING}", " ")

#: 550's messages for a bad dmon/pmon command line.
NOT_RECOGNIZED = 'Option "{}" is not recognized.'
MISSING_VALUE = 'Option "{}" is missing its value.'
BAD_COUNT = "Invalid value for number of samples to be displayed"
BAD_DELAY = "Collection delay/interval should be between 1 second and {} seconds"
#: Ours: 550 over the mock does not reach its check of these (it needs the driver's export table).
BAD_VALUE = 'Option "{}" has an invalid value "{}".'


def usage_error(help_text: str, message: str) -> str:
    """550's answer to a bad option: the message, then the help from its Usage line on."""
    return message + "\n\n" + help_text[help_text.index("    Usage:"):]
