// goreader prints, as one JSON document, what NVIDIA's Go programs read of a node
// themselves, where no LD_PRELOAD reaches a static binary: gpu-feature-discovery and
// the device plugin walk /sys/bus/pci/devices (go-nvlib's nvpci: vendor, device,
// class, numa_node, each read through the entry's link), mig-parted does too and
// reads /proc/modules; the driver's version is in /sys/module/nvidia/version and
// /proc/driver/nvidia/version. Missing files are null; nothing is written.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

const (
	pciDevices    = "/sys/bus/pci/devices"
	sysDevices    = "/sys/devices/"
	moduleVersion = "/sys/module/nvidia/version"
	driverVersion = "/proc/driver/nvidia/version"
	procModules   = "/proc/modules"
	// A sysfs attribute is a page at most; nothing read here is larger.
	maxRead = 64 << 10
)

type pciDevice struct {
	Name     string  `json:"name"`
	Vendor   *string `json:"vendor"`
	Device   *string `json:"device"`
	Class    *string `json:"class"`
	NumaNode *string `json:"numa_node"`
	// Where the entry resolves (filepath.EvalSymlinks), and whether that is under
	// /sys/devices as on a real node (go-nvlib resolves it to find the device's root).
	Resolved        string `json:"resolved"`
	UnderSysDevices bool   `json:"under_sys_devices"`
	ResolveError    string `json:"resolve_error,omitempty"`
}

type report struct {
	PCIDevices        []pciDevice `json:"pci_devices"`
	PCIDevicesError   string      `json:"pci_devices_error,omitempty"`
	ModuleVersion     *string     `json:"module_nvidia_version"`
	DriverVersion     *string     `json:"proc_driver_nvidia_version"`
	ProcModulesNvidia []string    `json:"proc_modules_nvidia"`
	ProcModulesExists bool        `json:"proc_modules_exists"`
}

func readTrimmed(path string) *string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, maxRead)
	n, _ := f.Read(buf)
	value := strings.TrimSpace(string(buf[:n]))
	return &value
}

func readWhole(path string) *string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, maxRead)
	n, _ := f.Read(buf)
	value := string(buf[:n])
	return &value
}

func main() {
	out := report{PCIDevices: []pciDevice{}, ProcModulesNvidia: []string{}}
	entries, err := os.ReadDir(pciDevices)
	if err != nil {
		out.PCIDevicesError = err.Error()
	}
	names := make([]string, 0, len(entries))
	for _, entry := range entries {
		names = append(names, entry.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		entry := filepath.Join(pciDevices, name)
		dev := pciDevice{
			Name:     name,
			Vendor:   readTrimmed(filepath.Join(entry, "vendor")),
			Device:   readTrimmed(filepath.Join(entry, "device")),
			Class:    readTrimmed(filepath.Join(entry, "class")),
			NumaNode: readTrimmed(filepath.Join(entry, "numa_node")),
		}
		if resolved, err := filepath.EvalSymlinks(entry); err != nil {
			dev.ResolveError = err.Error()
		} else {
			dev.Resolved = resolved
			dev.UnderSysDevices = strings.HasPrefix(resolved, sysDevices)
		}
		out.PCIDevices = append(out.PCIDevices, dev)
	}
	out.ModuleVersion = readTrimmed(moduleVersion)
	out.DriverVersion = readWhole(driverVersion)
	if f, err := os.Open(procModules); err == nil {
		out.ProcModulesExists = true
		scanner := bufio.NewScanner(f)
		for scanner.Scan() {
			if line := scanner.Text(); strings.HasPrefix(line, "nvidia") {
				out.ProcModulesNvidia = append(out.ProcModulesNvidia, line)
			}
		}
		f.Close()
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		os.Exit(1)
	}
}
